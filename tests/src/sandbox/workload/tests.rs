use super::*;

#[test]
fn pool_creates_up_to_its_size_and_never_past_the_total() {
    let mut s = PoolState::default();
    assert_eq!(s.to_create(6, 10), 6);
    s.created = 6;
    for i in 0..6 {
        s.present.insert(format!("p{i}"), "Running".into());
    }
    assert_eq!(s.to_create(6, 10), 0);
    s.ended.insert("p0".into(), Ending::Succeeded);
    s.ended.insert("p1".into(), Ending::Failed);
    assert_eq!(s.to_create(6, 10), 2);
    s.created = 9;
    assert_eq!(s.to_create(6, 10), 1);
    assert!(!s.done(10));
}

#[test]
fn pool_is_done_only_when_every_pod_ended_and_is_gone() {
    let mut s = PoolState {
        created: 2,
        ..Default::default()
    };
    s.ended.insert("a".into(), Ending::Succeeded);
    s.ended.insert("b".into(), Ending::Succeeded);
    s.present.insert("b".into(), "Succeeded".into());
    assert!(!s.done(2));
    s.present.clear();
    assert!(s.done(2));
}

#[test]
fn runner_pod_tolerates_the_taint_and_selects_virtual_kubelets() {
    let p = runner_pod(
        "r",
        "ghcr.io/cirruslabs/macos-tahoe-base:latest",
        "4",
        "8Gi",
        None,
    );
    let spec = p.spec.unwrap();
    assert_eq!(spec.containers.len(), 1);
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    assert_eq!(
        spec.node_selector.unwrap().get("type").map(String::as_str),
        Some("virtual-kubelet")
    );
    assert_eq!(
        spec.tolerations.unwrap()[0].key.as_deref(),
        Some("virtual-kubelet.io/provider")
    );
    assert!(spec.containers[0].command.is_none());
}

#[test]
fn a_runner_with_a_job_runs_it_with_the_token_from_the_secret() {
    let job = Job {
        seconds: 1.5,
        checksum: "1219131554 3".into(),
    };
    let p = runner_pod("r", "img:v1", "4", "8Gi", Some(&job));
    let c = &p.spec.unwrap().containers[0];
    assert_eq!(c.command.as_ref(), Some(&job.command()));
    assert_eq!(c.args.as_ref(), Some(&job.args()));
    let env = c.env.as_ref().unwrap();
    assert_eq!(env.len(), 1);
    assert_eq!(env[0].name, guest::ENV_NAME);
    let r = env[0]
        .value_from
        .as_ref()
        .and_then(|v| v.secret_key_ref.as_ref())
        .unwrap();
    assert_eq!(
        (r.name.as_str(), r.key.as_str()),
        (guest::SECRET_NAME, guest::SECRET_KEY)
    );
}

#[test]
fn a_lost_pod_ends_the_wait_as_an_ended_one_does() {
    let mut s = PoolState {
        created: 2,
        ..Default::default()
    };
    s.ended.insert("a".into(), Ending::Succeeded);
    assert!(!s.done(2), "b neither ended nor lost");
    s.lost.insert("b".into());
    assert!(s.done(2));
}
