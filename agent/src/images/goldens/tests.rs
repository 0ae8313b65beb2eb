//! Tests of [`super::Goldens`] against the in-memory tart.

use std::{sync::Arc, time::Duration};

use tart::{ErrorKind, Op, testing::MemTart};

use super::*;

const DIGEST: &str = "sha256:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn source() -> String {
    format!("r.example/acme/macos@{DIGEST}")
}

#[tokio::test]
async fn a_golden_is_cloned_once_then_found() {
    let tart = Arc::new(MemTart::new());
    let goldens = Goldens::new("tkl-");
    let (name, first) = goldens
        .ensure(tart.clone(), &source(), DIGEST, None)
        .await
        .unwrap();
    assert_eq!(first, GoldenResult::Miss);
    assert_eq!(name.as_str(), "tkl-golden-00112233445566778899aabbccdde");
    let (_, second) = goldens
        .ensure(tart.clone(), &source(), DIGEST, None)
        .await
        .unwrap();
    assert_eq!(second, GoldenResult::Hit);
    assert_eq!(tart.calls_of(Op::Clone), [name.as_str().to_owned()]);
    assert!(tart.vm_names().contains(&name.as_str().to_owned()));
}

#[tokio::test(start_paused = true)]
async fn two_pods_of_a_new_digest_share_one_clone() {
    let tart = Arc::new(MemTart::new());
    tart.set_latency(Op::Clone, Duration::from_secs(30));
    let goldens = Goldens::new("tkl-");
    let src = source();
    let (a, b) = tokio::join!(
        goldens.ensure(tart.clone(), &src, DIGEST, None),
        goldens.ensure(tart.clone(), &src, DIGEST, None),
    );
    assert_eq!(a.unwrap().1, GoldenResult::Miss);
    assert_eq!(b.unwrap().1, GoldenResult::Miss);
    assert_eq!(tart.calls_of(Op::Clone).len(), 1, "{:?}", tart.calls());
}

#[tokio::test]
async fn a_failed_clone_leaves_no_golden_and_the_next_try_clones_again() {
    let tart = Arc::new(MemTart::new());
    tart.fail(Op::Clone, ErrorKind::NoSpace);
    let goldens = Goldens::new("tkl-");
    let err = goldens
        .ensure(tart.clone(), &source(), DIGEST, None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NoSpace);
    assert_eq!(
        tart.calls_of(Op::Delete).len(),
        1,
        "the half-made golden is deleted"
    );
    assert!(tart.vm_names().is_empty());
    let (_, again) = goldens
        .ensure(tart.clone(), &source(), DIGEST, None)
        .await
        .unwrap();
    assert_eq!(again, GoldenResult::Miss);
}

#[tokio::test]
async fn a_tag_is_not_a_digest() {
    let tart = Arc::new(MemTart::new());
    let err = Goldens::new("tkl-")
        .ensure(tart.clone(), "r.example/acme/macos:latest", "latest", None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Usage);
    assert!(tart.calls().is_empty());
}
