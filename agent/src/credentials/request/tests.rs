use super::*;

#[test]
fn the_request_is_kubelets_client_request() {
    let key = ServingKey::generate().unwrap();
    let csr = object(&key, "mac-1").unwrap();
    let spec = &csr.spec;
    assert_eq!(
        spec.signer_name,
        "kubernetes.io/kube-apiserver-client-kubelet"
    );
    assert_eq!(
        spec.usages.as_deref().unwrap(),
        ["digital signature", "key encipherment", "client auth"]
    );
    let name = csr.metadata.name.unwrap();
    assert_eq!(name, request_name("mac-1", &key.fingerprint()));
    assert!(name.starts_with("mac-1.client-"), "{name}");
    let pem = String::from_utf8(spec.request.0.clone()).unwrap();
    assert!(
        pem.starts_with("-----BEGIN CERTIFICATE REQUEST-----\n"),
        "{pem}"
    );
    // Never the private key.
    assert!(!pem.contains("PRIVATE KEY"));
}

#[test]
fn the_same_key_asks_under_the_same_name_and_a_new_key_under_another() {
    let key = ServingKey::generate().unwrap();
    let again = ServingKey::from_pkcs8(key.pkcs8()).unwrap();
    let a = object(&key, "mac-1").unwrap().metadata.name;
    assert_eq!(a, object(&again, "mac-1").unwrap().metadata.name);
    let other = ServingKey::generate().unwrap();
    assert_ne!(a, object(&other, "mac-1").unwrap().metadata.name);
}

#[test]
fn the_waiting_message_names_the_request_and_the_way_out() {
    let m = waiting_message("mac-1.client-0a1b2c3d");
    assert!(
        m.starts_with("waiting for approval of CSR mac-1.client-0a1b2c3d"),
        "{m}"
    );
    assert!(
        m.contains("kubectl certificate approve mac-1.client-0a1b2c3d"),
        "{m}"
    );
    assert!(m.contains("nodeclient"), "{m}");
}
