//! End-to-end: the node side survives the control plane and operator mistakes. An API server
//! outage longer than the node-monitor grace leaves the VMs running and the Node `Ready` again
//! within a status period; a second agent started for the same Node refuses to run it; a
//! crashed agent's successor on the same host takes over at once; an agent that sees another
//! instance renew its Lease stops and says why.

use crate::node_support;

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{
        coordination::v1::Lease,
        core::v1::{Event, Node, Pod},
    },
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::Timestamp,
};
use kube::{
    Api, ResourceExt,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use node_support::*;
use tart_kubelet_tests::{
    agent::Agent,
    cluster::{unique, wait_for},
    fake::FakeHome,
};

/// `--node-status-check-interval` in [`FAST`].
const STATUS_PERIOD: Duration = Duration::from_secs(2);
/// Right after its start the API server may refuse requests (403) for a few seconds while its
/// authorization cache fills; the agent retries on `API_RETRY` (0.5 s doubling to 7 s).
const WARM_UP: Duration = Duration::from_secs(7);
/// `--lease-duration` in [`FAST`].
const LEASE: Duration = Duration::from_secs(12);

fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn restart_count(p: &Pod) -> Option<i32> {
    Some(
        p.status
            .as_ref()?
            .container_statuses
            .as_ref()?
            .first()?
            .restart_count,
    )
}

async fn wait_pod(pods: &Api<Pod>, name: &str, agent: &Agent, pred: fn(&Pod) -> bool) -> Pod {
    wait_for(Duration::from_secs(90), || async {
        pods.get_opt(name).await.ok()?.filter(pred)
    })
    .await
    .unwrap_or_else(|e| panic!("pod {name}: {e}\n{}", agent.log_tail(40)))
}

async fn holder(leases: &Api<Lease>, node: &str) -> Option<String> {
    leases.get_opt(node).await.ok()??.spec?.holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_an_api_server_outage_the_node_is_ready_within_a_status_period_and_vms_keep_running()
{
    let cp = private("node-survive").await;
    let name = unique("node-survive");
    let agent = start(&cp, &name, FakeHome::new().unwrap(), &[]).await;
    let admin = cp.admin_client().await;
    wait_condition(&admin, &agent, "Ready", "True", Duration::from_secs(90)).await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    pods.create(&PostParams::default(), &vm_pod("vm-1", &name, true))
        .await
        .unwrap();
    let running = wait_pod(&pods, "vm-1", &agent, pod_ready).await;
    let vm = format!("tkl-{}", running.uid().unwrap());
    let vm_pid = agent.home().run_pid(&vm).expect("the VM runs");

    // An outage well past the node-monitor grace (16 s): the controller marks the Node
    // Unknown (and taints it) as soon as it can reach the API again.
    cp.stop_apiserver().await;
    wait_lease_age(&agent, 25).await;
    cp.start_apiserver().await;
    let back = Instant::now();

    // Follow Ready until the controller's Unknown was seen and corrected.
    let nodes: Api<Node> = Api::all(admin.clone());
    let unknown_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let fixed = wait_for(Duration::from_secs(60), || {
        let (nodes, name, unknown_at) = (nodes.clone(), name.clone(), unknown_at.clone());
        async move {
            let n = nodes.get_opt(&name).await.ok()??;
            let ready = status_of(&n, "Ready")?;
            let mut u = unknown_at.lock().unwrap();
            if ready == "Unknown" {
                u.get_or_insert_with(Instant::now);
            }
            (ready == "True" && u.is_some()).then(Instant::now)
        }
    })
    .await;
    let unknown = *unknown_at.lock().unwrap();
    let ready_at = match (fixed, unknown) {
        (Ok(at), Some(u)) => {
            let took = at.duration_since(u);
            eprintln!(
                "API back -> Unknown seen {:?}, -> Ready {:?} ({took:?} after Unknown)",
                u.duration_since(back),
                at.duration_since(back)
            );
            // The status loop reads the Node while its watch is down, so the next check
            // after the API's return sees the Unknown and corrects it.
            assert!(
                took <= STATUS_PERIOD + WARM_UP,
                "Ready only {took:?} after the controller's Unknown\n{}",
                agent.log_tail(40)
            );
            at
        }
        (_, None) => {
            // The Lease was renewed before the controller looked. Do what it would have done,
            // to check the correction all the same.
            eprintln!("the controller never marked the Node Unknown: doing it as the admin");
            let unknown = serde_json::json!({"status": {"conditions": [
                {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                 "message": "Kubelet stopped posting node status."}
            ]}});
            nodes
                .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&unknown))
                .await
                .unwrap();
            let t = Instant::now();
            wait_condition(&admin, &agent, "Ready", "True", STATUS_PERIOD + WARM_UP).await;
            eprintln!("admin's Unknown -> Ready in {:?}", t.elapsed());
            assert!(t.elapsed() <= STATUS_PERIOD + Duration::from_secs(2));
            Instant::now()
        }
        (Err(e), Some(_)) => panic!(
            "Node not Ready again after the outage: {e}\n{}",
            agent.log_tail(40)
        ),
    };

    // A Pod created right after schedules onto the Node: no taint left to wait out.
    pods.create(&PostParams::default(), &vm_pod("vm-2", &name, false))
        .await
        .unwrap();
    // The scheduler's own pace (it may have parked the Pod as unschedulable while the
    // lifecycle controller's `unreachable` taint was still on the Node) bounds this, not the
    // agent's: a minute, on a machine running several control planes at once.
    let scheduled = wait_for(Duration::from_secs(60), || async {
        pods.get_opt("vm-2").await.ok()??.spec?.node_name
    })
    .await
    .unwrap_or_else(|e| panic!("vm-2 not scheduled after the outage: {e}"));
    assert_eq!(scheduled, name);
    eprintln!(
        "Node Ready -> new Pod scheduled in {:?}",
        ready_at.elapsed()
    );

    // The VM Pod is Ready again, with the same VM process and no restart.
    let pod = wait_for(Duration::from_secs(20), || async {
        pods.get_opt("vm-1").await.ok()?.filter(pod_ready)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "vm-1 not Ready within 20 s of the Node (Pod watcher side): {e}\n{}",
            agent.log_tail(40)
        )
    });
    eprintln!("API back -> vm-1 Ready again in {:?}", back.elapsed());
    assert_eq!(restart_count(&pod), Some(0), "no VM restart");
    assert_eq!(
        agent.home().run_pid(&vm),
        Some(vm_pid),
        "the same VM process"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_agent_for_the_same_node_refuses_and_a_crashed_agents_successor_takes_over_at_once()
 {
    let cp = shared().await;
    let name = unique("node-dup");
    let mut agent = start(cp, &name, FakeHome::new().unwrap(), &[]).await;
    let admin = cp.admin_client().await;
    wait_condition(&admin, &agent, "Ready", "True", Duration::from_secs(90)).await;
    let ns = "default";
    let pods: Api<Pod> = Api::namespaced(admin.clone(), ns);
    let pod_name = unique("dup-vm");
    pods.create(&PostParams::default(), &vm_pod(&pod_name, &name, true))
        .await
        .unwrap();
    let running = wait_pod(&pods, &pod_name, &agent, pod_ready).await;
    let vm = format!("tkl-{}", running.uid().unwrap());
    let vm_pid = agent.home().run_pid(&vm).expect("the VM runs");
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
    let first = holder(&leases, &name).await.expect("held");

    // The mistake: a second agent for the same Mac and Node.
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        agent.duplicate_command(dir.path()).unwrap().output(),
    )
    .await
    .expect("the duplicate agent exits within 30 s")
    .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("duplicate exited in {:?}", t0.elapsed());
    assert!(
        !out.status.success(),
        "non-zero exit: {:?}\n{text}",
        out.status
    );
    assert!(text.contains(&first), "names the holder {first}:\n{text}");
    let vms: Vec<_> = std::fs::read_dir(agent.home().path().join("vms"))
        .unwrap()
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .filter(|n| !tart_kubelet_tests::fake::is_golden(n))
        .collect();
    assert_eq!(vms, std::slice::from_ref(&vm), "no second VM");
    assert_eq!(agent.home().run_pid(&vm), Some(vm_pid));
    agent.wait_ready(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        holder(&leases, &name).await.as_deref(),
        Some(first.as_str())
    );

    // A crashed agent (no release) on this same host: its successor sees from the holder
    // identity that the holder ran here and its process is gone, and takes the Lease at once
    // instead of waiting for it to expire.
    assert!(
        first.contains(".h") && first.contains(&format!(".p{}", agent.pid().unwrap())),
        "the holder identity names the host and process: {first}"
    );
    agent.sigkill().await.unwrap();
    let killed = Instant::now();
    let last_renewal = leases.get(&name).await.unwrap().spec.unwrap().renew_time;
    agent.restart().unwrap();
    let second = wait_for(LEASE + Duration::from_secs(20), || async {
        holder(&leases, &name).await.filter(|h| *h != first)
    })
    .await
    .unwrap_or_else(|e| panic!("no takeover: {e}\n{}", agent.log_tail(30)));
    eprintln!("SIGKILL -> taken over in {:?}", killed.elapsed());
    assert!(second.starts_with(&format!("{name}_")), "{second}");
    let taken = leases.get(&name).await.unwrap().spec.unwrap();
    let (Some(MicroTime(acquired)), Some(MicroTime(renewed))) = (taken.acquire_time, last_renewal)
    else {
        panic!("acquireTime and the old renewTime are set");
    };
    let waited = acquired.duration_since(renewed);
    assert!(
        waited
            < k8s_openapi::jiff::SignedDuration::try_from(LEASE).unwrap()
                - k8s_openapi::jiff::SignedDuration::from_secs(2),
        "taken {waited:?} after the last renewal: the successor waited for the Lease to expire\n{}",
        agent.log_tail(30)
    );
    assert!(
        agent
            .log()
            .contains("the Lease's holder ran on this Mac and is gone"),
        "{}",
        agent.log_tail(30)
    );
    assert_eq!(taken.lease_transitions, Some(1));
    // The successor adopts the running VM.
    agent.wait_ready(Duration::from_secs(30)).await.unwrap();
    let pod = wait_pod(&pods, &pod_name, &agent, pod_ready).await;
    assert_eq!(restart_count(&pod), Some(0));
    assert_eq!(
        agent.home().run_pid(&vm),
        Some(vm_pid),
        "the VM was adopted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_sees_another_holder_renew_its_lease_stops_and_says_why() {
    let cp = shared().await;
    let name = unique("node-fence");
    let agent = start(cp, &name, FakeHome::new().unwrap(), &[]).await;
    let admin = cp.admin_client().await;
    wait_condition(&admin, &agent, "Ready", "True", Duration::from_secs(90)).await;
    agent.wait_ready(Duration::from_secs(30)).await.unwrap();

    // Another instance (simulated) takes the Lease over.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "kube-node-lease");
    let intruder = format!("{name}_intruder");
    let mut l = leases.get(&name).await.unwrap();
    let spec = l.spec.as_mut().unwrap();
    spec.holder_identity = Some(intruder.clone());
    spec.renew_time = Some(MicroTime(Timestamp::now()));
    leases
        .replace(&name, &PostParams::default(), &l)
        .await
        .unwrap();

    let body = wait_for(Duration::from_secs(20), || async {
        let r = agent.get("/readyz").await.ok()?;
        (r.status == 503 && r.body.contains(&intruder)).then_some(r.body)
    })
    .await
    .unwrap_or_else(|e| panic!("/readyz still ok: {e}\n{}", agent.log_tail(30)));
    assert!(
        body.contains("[-]lease failed: another agent instance"),
        "{body}"
    );
    assert!(
        agent
            .log()
            .contains("another tart-kubelet instance renews this Node's Lease"),
        "{}",
        agent.log_tail(30)
    );
    let events: Api<Event> = Api::namespaced(admin.clone(), "default");
    let warning = wait_for(Duration::from_secs(20), || async {
        let lp = ListParams::default().fields(&format!("involvedObject.name={name}"));
        let list = events.list(&lp).await.ok()?;
        list.items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("DuplicateAgent"))
    })
    .await
    .expect("a DuplicateAgent event");
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert!(warning.message.unwrap_or_default().contains(&intruder));
    // It never renews again: the intruder stays the holder.
    let renewals = agent
        .metric("tart_kubelet_node_lease_renewals_total{outcome=\"ok\"}")
        .await
        .unwrap();
    wait_for(LEASE / 2, || async {
        let again = agent
            .metric("tart_kubelet_node_lease_renewals_total{outcome=\"ok\"}")
            .await
            .ok()?;
        (again > renewals).then_some(())
    })
    .await
    .expect_err("no renewal after being fenced");
    assert_eq!(holder(&leases, &name).await, Some(intruder));
}
