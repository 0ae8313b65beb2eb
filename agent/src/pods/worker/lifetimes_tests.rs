//! State by lifetime on a paused clock: a run's tasks end when the run is dropped, and the
//! image's digest is resolved once per provisioning.

use std::{net::Ipv4Addr, path::Path};

use tokio::time::Instant;

use super::test_support::*;
use super::*;

/// Whether a run of the Pod's log under `root` is marked ended (`<restart>.ended`).
fn run_marked_ended(root: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(root) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        p.extension().is_some_and(|x| x == "ended") || (p.is_dir() && run_marked_ended(&p))
    })
}

/// Poll `cond` on the paused clock until it holds, within a real-time deadline (the
/// collector's last read runs on a blocking thread, outside the virtual clock).
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn dropping_a_run_ends_its_tasks_frees_its_slot_and_unlists_its_vm() {
    let r = rig(MemTart::new().with_cached(IMAGE), 2);
    let id = uid(60);
    let vm = VmNaming::default().vm_name(&id).unwrap();
    r.tart.clone_vm(IMAGE, &vm, None).await.unwrap();
    let proc = r.tart.run(&vm, &r.worker.cfg.run_opts(&vm)).await.unwrap();
    let slot = r.worker.slots.acquire_for_adopted(&id);
    let pod = crate::pods::fixtures::test_pod()
        .uid(&id)
        .merge_container(serde_json::json!({"livenessProbe": {
            "exec": {"command": ["pgrep", "runner"]}, "periodSeconds": 1}}))
        .build();
    let mut i = input(&id, RestartPolicy::Always);
    i.pod = PodSnapshot(Arc::new(pod));
    i.obj.name = Some("runner".into());
    i.obj.namespace = Some("ns".into());
    let (_in, rx) = watch::channel(i.clone());
    let start = Start::Adopted {
        vm: proc,
        slot,
        started_at: None,
    };
    let mut w = Worker::new(r.worker.clone(), vm.clone(), rx, start, 0);
    w.serve_run(&i);
    w.state.pod_ip = Some(Ipv4Addr::new(192, 168, 64, 2));
    w.start_probing(&i);
    let pod_refs = || Arc::strong_count(&i.pod.0);
    let unhealthy_refs = || Arc::strong_count(&w.unhealthy_seq);
    // The run's tasks are alive: the prober probes, the refresher holds the Pod.
    eventually("the prober never probed", || {
        !r.tart.calls_of(Op::Exec).is_empty()
    })
    .await;
    let with_run = pod_refs();
    assert_eq!(unhealthy_refs(), 2, "the prober holds the event numbering");
    assert!(r.worker.slots.holds(&id));
    assert!(r.worker.running.contains(&vm), "the run is listed");
    let logs = r.worker.cfg.pod_log_dir.clone();
    assert!(!run_marked_ended(&logs), "the run's log is not over");

    drop(w.run.take());

    eventually("the prober task still holds its report", || {
        unhealthy_refs() == 1
    })
    .await;
    eventually("the refresher task still holds the Pod", || {
        pod_refs() == with_run - 1
    })
    .await;
    eventually("the collector never marked the run ended", || {
        run_marked_ended(&logs)
    })
    .await;
    assert!(!r.worker.slots.holds(&id), "the run's slot is freed");
    assert!(!r.worker.running.contains(&vm), "the run is still listed");
    let probed = r.tart.calls_of(Op::Exec).len();
    tokio::time::advance(Duration::from_secs(30)).await;
    assert_eq!(
        r.tart.calls_of(Op::Exec).len(),
        probed,
        "probed after the run was dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn the_image_id_is_the_digest_resolved_for_the_clone_even_if_the_tag_is_gone_later() {
    let r = rig(MemTart::new(), 2);
    // The IP comes late: time enough to take the tag out of the cache after the clone.
    r.tart.set_latency(Op::Ip, Duration::from_secs(5));
    let id = uid(61);
    let vm = VmNaming::default().vm_name(&id).unwrap();
    let t0 = Instant::now();
    let mut h = spawn(
        r.worker.clone(),
        vm,
        input(&id, RestartPolicy::Always),
        Start::Fresh,
        0,
    );
    within(&mut h, Duration::from_secs(1), "started", |s| {
        matches!(s.facts.process, Process::Running { has_ip: false, .. })
    })
    .await;
    assert!(t0.elapsed() < Duration::from_secs(5), "the IP came already");
    r.tart.delete_image(IMAGE).await.unwrap();
    assert!(!r.tart.is_cached(IMAGE));
    let s = within(&mut h, Duration::from_secs(30), "running", running_with_ip).await;
    let cloned_from = format!(
        "ghcr.io/cirruslabs/macos@{}",
        tart::testing::fake_digest(IMAGE)
    );
    assert_eq!(s.image_id.as_deref(), Some(cloned_from.as_str()));
}
