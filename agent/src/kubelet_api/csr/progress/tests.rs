use rustls::pki_types::{CertificateDer, pem::PemObject};

use super::*;
use crate::kubelet_api::csr::request::ServingKey;

#[tokio::test]
async fn progress_tells_a_first_request_from_a_renewal_and_an_issued_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pki");
    let progress = || super::progress(dir.clone(), "mac-1", None, Duration::from_secs(1));
    assert_eq!(progress().await, Progress::None);

    let store = Store::new(&dir);
    let pending = ServingKey::generate().unwrap();
    store.save_pending_key(&pending).unwrap();
    let csr = request_name("mac-1", &pending.fingerprint());
    assert!(matches!(
        progress().await,
        Progress::Requested { csr: c, verdict: Err(_), serving_until: None } if c == csr
    ));

    // A stored certificate valid until 2126 (the test PKI's): a renewal is waiting.
    let pem = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src/kubelet_api/testdata/serving.crt"),
    )
    .unwrap();
    let chain: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .map(Result::unwrap)
        .collect();
    store
        .save_current(&chain, &ServingKey::generate().unwrap())
        .unwrap();
    let end = SystemTime::UNIX_EPOCH + Duration::from_secs(4_949_089_722);
    assert!(matches!(
        progress().await,
        Progress::Requested { serving_until: Some(t), .. } if t == end
    ));
    store.drop_pending_key();
    assert_eq!(
        progress().await,
        Progress::Issued {
            not_after: end,
            expired: false
        }
    );
}
