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
        Progress::Requested { csr: c, verdict: Err(_), pending_for: None, serving_until: None } if c == csr
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

#[test]
fn a_request_is_timed_only_while_it_is_pending() {
    let created = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let now = created + Duration::from_secs(301);
    let cases = [
        (
            Verdict::Pending,
            Some(created),
            Some(Duration::from_secs(301)),
        ),
        (Verdict::Pending, None, None),
        (
            Verdict::Pending,
            Some(now + Duration::from_secs(5)),
            Some(Duration::ZERO),
        ),
        (Verdict::Approved, Some(created), None),
        (Verdict::Issued(Vec::new()), Some(created), None),
        (Verdict::Denied("no".into()), Some(created), None),
    ];
    for (verdict, created, want) in cases {
        assert_eq!(pending_for(&verdict, created, now), want, "{verdict:?}");
    }
    assert!(pending_for(&Verdict::Pending, Some(created), now).unwrap() > PENDING_TOO_LONG);
}
