use super::*;

fn api_err(code: u16) -> kube::Error {
    kube::Error::Api(Box::new(kube::core::Status {
        code,
        message: "m".into(),
        ..Default::default()
    }))
}

#[test]
fn a_403_is_advised_only_once_it_persisted() {
    let t0 = Instant::now();
    let s = Duration::from_secs(1);
    let (a, v) = on_forbidden(None, t0);
    assert_eq!(v, Verdict::Retrying);
    let (b, v) = on_forbidden(Some(a), t0 + 5 * s);
    assert_eq!(v, Verdict::Quiet, "a brief 403 after a restart stays quiet");
    assert_eq!(b.since, t0);
    let (c, v) = on_forbidden(Some(b), t0 + 30 * s);
    assert_eq!(v, Verdict::Advise);
    let (_, v) = on_forbidden(Some(c), t0 + 90 * s);
    assert_eq!(v, Verdict::Quiet, "the advice is given once per run");
}

#[tokio::test(start_paused = true)]
async fn a_success_ends_the_run_of_403s() {
    let a = ApiAccess::default();
    a.failed("patch", "nodes/status", &api_err(403));
    tokio::time::advance(Duration::from_secs(20)).await;
    a.ok("patch", "nodes/status");
    assert!(a.lock().is_empty());
    tokio::time::advance(Duration::from_secs(20)).await;
    a.failed("patch", "nodes/status", &api_err(403));
    let streak = a.lock()[&("patch", "nodes/status")];
    assert_eq!(streak.since, Instant::now(), "a new run starts");
    assert!(!streak.advised);
}
