use std::{os::unix::fs::PermissionsExt as _, time::SystemTime};

use super::*;
use crate::credentials::lifetime::{Standing, standing};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/kubelet_api/testdata")
        .join(name)
}

fn facts() -> ClusterFacts {
    let ca = std::fs::read(testdata("ca.crt")).unwrap();
    use rustls::pki_types::{CertificateDer, pem::PemObject as _};
    let der = CertificateDer::pem_slice_iter(&ca)
        .next()
        .unwrap()
        .unwrap()
        .to_vec();
    ClusterFacts {
        server: "https://10.0.0.1:6443".into(),
        ca: vec![der],
        insecure: false,
        tls_server_name: None,
    }
}

/// A kubeconfig whose one user has `auth` (YAML lines under `user:`).
fn with_user(auth: &str) -> Kubeconfig {
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nclusters:\n- name: k\n  cluster:\n    server: https://x\nusers:\n- name: u\n  user:\n{auth}\n"
    );
    Kubeconfig::from_yaml(&text).unwrap()
}

#[test]
fn the_client_certificate_comes_from_data_a_relative_file_or_nowhere() {
    let dir = Path::new("/etc/tart-kubelet");
    let cases = [
        (
            "    client-certificate-data: aGVsbG8=",
            CertSource::Data(b"hello".to_vec()),
        ),
        (
            "    client-certificate: pki/client.pem",
            CertSource::File(dir.join("pki/client.pem")),
        ),
        (
            "    client-certificate: /abs/client.pem",
            CertSource::File("/abs/client.pem".into()),
        ),
        ("    token: abcdef.0123456789abcdef", CertSource::None),
    ];
    for (auth, want) in cases {
        assert_eq!(client_certificate(&with_user(auth), dir), want, "{auth}");
    }
    let mut no_context = with_user("    token: x");
    no_context.current_context = Some("other".into());
    assert_eq!(client_certificate(&no_context, dir), CertSource::None);
}

#[test]
fn a_written_kubeconfig_is_private_and_names_the_pair_for_certificate_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let pair = tmp.path().join("pki/kubelet-client-current.pem");
    let path = tmp.path().join("conf/kubeconfig");
    write(&path, &render(&facts(), &pair)).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let back = Kubeconfig::read_from(&path).unwrap();
    let auth = back.auth_infos[0].auth_info.as_ref().unwrap();
    assert_eq!(auth.client_certificate.as_deref(), pair.to_str());
    assert_eq!(auth.client_key.as_deref(), pair.to_str());
    assert!(auth.token.is_none());
    assert_eq!(
        client_certificate(&back, tmp.path()),
        CertSource::File(pair.clone())
    );
    let cluster = back.clusters[0].cluster.as_ref().unwrap();
    assert_eq!(cluster.server.as_deref(), Some("https://10.0.0.1:6443"));
    let ca = base64::engine::general_purpose::STANDARD
        .decode(cluster.certificate_authority_data.as_deref().unwrap())
        .unwrap();
    assert_eq!(ca, std::fs::read(testdata("ca.crt")).unwrap());
    assert_eq!(back.current_context.as_deref(), Some("default-context"));
}

#[tokio::test]
async fn kube_loads_the_written_kubeconfig_with_its_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let pair = tmp.path().join("kubelet-client-current.pem");
    let mut text = std::fs::read(testdata("dated-current.crt")).unwrap();
    text.extend(std::fs::read(testdata("dated-current.key")).unwrap());
    std::fs::write(&pair, text).unwrap();
    let path = tmp.path().join("kubeconfig");
    write(&path, &render(&facts(), &pair)).unwrap();
    let kc = Kubeconfig::read_from(&path).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    assert_eq!(ClusterFacts::of(&cfg), facts());
    let v = read_validity(&path).unwrap();
    assert_eq!(standing(Some(v), SystemTime::now()), Standing::Valid);
    assert_eq!(validity_of_config(&cfg), Some(v));
    let token = kube::Config::new("https://x".parse().unwrap());
    assert_eq!(validity_of_config(&token), None);
}

#[test]
fn the_validity_read_says_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let absent = tmp.path().join("kubeconfig");
    assert!(matches!(
        read_validity(&absent),
        Err(ReadError::NoKubeconfig(_))
    ));
    let token = tmp.path().join("token.kubeconfig");
    std::fs::write(
        &token,
        serde_json::to_vec(&with_user("    token: x")).unwrap(),
    )
    .unwrap();
    assert!(matches!(
        read_validity(&token),
        Err(ReadError::NoCertificate(_))
    ));
    let gone = tmp.path().join("gone.kubeconfig");
    write(&gone, &render(&facts(), &tmp.path().join("nope.pem"))).unwrap();
    assert!(matches!(read_validity(&gone), Err(ReadError::File { .. })));
}

#[test]
fn expired_and_future_certificates_are_told_apart() {
    let now = SystemTime::now();
    let read = |n: &str| validity_of_pem(&std::fs::read(testdata(n)).unwrap());
    assert_eq!(standing(read("dated-expired.crt"), now), Standing::Expired);
    assert_eq!(
        standing(read("dated-future.crt"), now),
        Standing::NotYetValid
    );
    assert_eq!(standing(read("dated-current.crt"), now), Standing::Valid);
    assert_eq!(standing(validity_of_pem(b"junk"), now), Standing::Missing);
}
