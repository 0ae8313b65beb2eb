use std::path::Path;

use rustls::pki_types::{CertificateDer, pem::PemObject};

use super::*;

fn testdata(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/kubelet_api/testdata")
        .join(name);
    CertificateDer::pem_file_iter(path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

#[test]
fn cn_is_the_user_and_every_o_a_group() {
    let s = subject(&testdata("client.crt")).unwrap();
    assert_eq!(s.common_name, "alice");
    assert_eq!(s.organizations, ["devs", "ops"]);
}

#[test]
fn the_issuer_name_is_not_taken_for_the_subject() {
    let der = testdata("serving.crt");
    assert_eq!(subject(&der).unwrap().common_name, "serving-a");
    let issuer = names(certificate(&der).unwrap().tbs_certificate().issuer());
    assert_ne!(issuer.common_name, "serving-a");
}

#[test]
fn truncated_or_foreign_bytes_are_refused() {
    let der = testdata("client.crt");
    assert_eq!(subject(&der[..der.len() / 2]), None);
    assert_eq!(subject(&[der.as_slice(), b"x"].concat()), None);
    assert_eq!(subject(b"not a certificate"), None);
    assert_eq!(subject(&[]), None);
}
