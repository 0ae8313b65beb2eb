use super::*;
use crate::vitals::model::{HostSample, VmSample, VmVitals};

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

fn pod(uid: &str, name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "ci", "uid": uid},
        "spec": {"containers": [{"name": "runner", "image": "img"}]}
    }))
    .unwrap()
}

#[test]
fn running_vms_become_their_pods_and_the_host_the_node() {
    let naming = VmNaming::new("tkl-").unwrap();
    let mut snap = Snapshot::default();
    for (s, cpu) in [(100, 1000.0), (110, 1010.0)] {
        snap.host.push(HostSample {
            at: Some(t(s)),
            cpu_seconds_total: Some(cpu),
            memory_used_bytes: Some(6 << 30),
            ..HostSample::default()
        });
    }
    let sample = |at| VmSample {
        at: t(at),
        cpu_seconds_total: 42.0,
        cpu_cores: Some(0.5),
        rss_bytes: 4 << 30,
    };
    let vm = |at| VmVitals {
        first_seen: Some(t(50)),
        host: [sample(at)].into_iter().collect(),
        guest: Default::default(),
    };
    let a = naming
        .vm_name("00000000-0000-0000-0000-00000000000a")
        .unwrap()
        .to_string();
    let b = naming
        .vm_name("00000000-0000-0000-0000-00000000000b")
        .unwrap()
        .to_string();
    let a_vm = a.clone();
    snap.vms.insert(a, vm(110));
    snap.vms.insert(b, vm(100));
    let pods = [
        pod("00000000-0000-0000-0000-00000000000a", "a"),
        pod("00000000-0000-0000-0000-00000000000b", "b"),
        pod("00000000-0000-0000-0000-00000000000c", "c"),
    ];
    let v = view(&snap, &pods, &naming, "mac-1", t(10));
    assert_eq!(v.pods.len(), 1, "b is not running, c has no VM");
    assert_eq!(v.pods[0].name, "a");
    assert_eq!(v.pods[0].container, "runner");
    assert_eq!(v.pods[0].image, "img");
    assert_eq!(v.pods[0].vm, a_vm);
    assert_eq!(
        v.pods[0].memory_limit_bytes, None,
        "no memory in the Pod's resources"
    );
    assert_eq!(v.pods[0].start, t(50));
    assert_eq!(v.pods[0].usage.working_set_bytes, 4 << 30);
    let n = v.node.unwrap();
    assert_eq!(n.cpu_seconds_total, 1010.0);
    assert_eq!(n.cpu_cores, Some(1.0));
}

#[test]
fn the_sampler_wants_the_vm_of_every_bound_pod_with_a_uid() {
    let uid = "00000000-0000-0000-0000-00000000000a";
    let mut nameless = pod(uid, "b");
    nameless.metadata.uid = None;
    let pods: Arc<dyn PodSource> =
        Arc::new(move || vec![Arc::new(pod(uid, "a")), Arc::new(nameless.clone())]);
    let wanted = wanted(pods, VmNaming::new("tkl-").unwrap());
    assert_eq!(wanted(), [format!("tkl-{uid}")].into_iter().collect());
}

#[test]
fn the_memory_limit_is_the_vms_memory_from_the_pods_resources() {
    let naming = VmNaming::new("tkl-").unwrap();
    let uid = "00000000-0000-0000-0000-00000000000a";
    let mut snap = Snapshot::default();
    snap.host.push(HostSample {
        at: Some(t(100)),
        ..HostSample::default()
    });
    snap.vms.insert(
        naming.vm_name(uid).unwrap().to_string(),
        VmVitals {
            first_seen: Some(t(50)),
            host: [VmSample {
                at: t(100),
                cpu_seconds_total: 1.0,
                cpu_cores: None,
                rss_bytes: 1 << 30,
            }]
            .into_iter()
            .collect(),
            guest: Default::default(),
        },
    );
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "a", "namespace": "ci", "uid": uid},
        "spec": {"containers": [{"name": "runner", "image": "img",
            "resources": {"requests": {"memory": "6Gi"}, "limits": {"memory": "7500Mi"}}}]}
    }))
    .unwrap();
    let v = view(&snap, &[pod], &naming, "mac-1", t(10));
    assert_eq!(
        v.pods[0].memory_limit_bytes,
        Some(7500 << 20),
        "the limit wins"
    );
}
