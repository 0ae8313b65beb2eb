//! End to end: vitals on the real control plane, with fake-tart running the real guest
//! launcher and standing in for the guest's `vm_stat`, `memory_pressure`, `sysctl` and `df`.
//! A guest that runs out of memory ends `OOMKilled` with its last samples in the message; a
//! VM killed from outside while the host is under critical memory pressure is a
//! `DisruptionTarget`; `/stats/summary` and `/metrics/resource` serve what metrics-server
//! reads; the launcher's vitals loop fails open.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e pod_vitals:: -- --nocapture`

use crate::pod_support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use pod_support::{Env, WAIT, phase};
use tart_kubelet_tests::{
    cluster::{testing::run_program, wait_for},
    fake::{GuestVitals, Knobs, VmKnob},
};

fn guest(vitals: GuestVitals) -> Knobs {
    Knobs::new().with_vm(
        "*",
        VmKnob {
            guest_vitals: Some(vitals),
            ..VmKnob::default().running_guest_launcher()
        },
    )
}

fn job(env: &Env, name: &str, script: &str) -> Pod {
    let mut pod = env.pod(name);
    let spec = pod.spec.as_mut().unwrap();
    spec.restart_policy = Some("Never".into());
    spec.containers[0].command = Some(vec!["/bin/sh".into(), "-c".into(), script.into()]);
    pod
}

fn status_dir(env: &Env, pod: &Pod) -> PathBuf {
    env.guest_dir.join(Env::vm_of(pod)).join("status")
}

async fn wait_file(path: &Path, what: &str, pred: impl Fn(&str) -> bool) -> String {
    wait_for(WAIT, || {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        std::future::ready(pred(&text).then_some(text))
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: {}", path.display()))
}

fn terminated(p: &Pod) -> (String, String) {
    let t = p
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0]
        .state
        .as_ref()
        .unwrap()
        .terminated
        .clone()
        .expect("terminated");
    (t.reason.unwrap_or_default(), t.message.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_that_exhausts_its_memory_is_oomkilled_with_its_last_samples() {
    let healthy = GuestVitals {
        free_percent: Some(55),
        ..GuestVitals::default()
    };
    let mut env = Env::new("oom", guest(healthy), &["--vitals-interval", "1s"]).await;
    env.start_agent();
    // The job waits for the test's signal, then dies as a jetsam-killed process does.
    env.create(&job(
        &env,
        "oom",
        "while [ ! -e \"$TART_GUEST_ROOT/oom\" ]; do sleep 0.1; done; exit 137",
    ))
    .await;
    let pod = env
        .wait_pod("oom", "Running", |p| phase(p) == "Running")
        .await;
    let vitals = status_dir(&env, &pod).join("vitals");
    wait_file(&vitals, "healthy samples", |t| {
        t.matches("free_percent=55").count() >= 2
    })
    .await;
    let out_of_memory = GuestVitals {
        pressure_level: Some(4),
        free_percent: Some(2),
        free_pages: Some(812),
        swap_used_mib: Some(1900.0),
        jetsam_kills: Some(2),
        ..GuestVitals::default()
    };
    env.home.set_knobs(&guest(out_of_memory)).unwrap();
    // Two such samples span one of the agent's 1 s ticks, so its own history of three (the
    // death summary's source) holds an out-of-memory sample after the healthy ones.
    wait_file(&vitals, "out-of-memory samples", |t| {
        t.matches("jetsam_kills=2").count() >= 2
    })
    .await;
    std::fs::write(env.home.vm_dir(&Env::vm_of(&pod)).join("guest/oom"), "").unwrap();
    let p = env
        .wait_pod("oom", "Failed", |p| phase(p) == "Failed")
        .await;
    let (reason, message) = terminated(&p);
    assert_eq!(reason, "OOMKilled", "{message}\n{}", env.agent_log());
    assert!(
        message.starts_with("the guest ran out of memory"),
        "{message}"
    );
    assert!(message.contains("guest memory free 55%"), "{message}");
    assert!(message.contains("2% pressure"), "{message}");
    assert!(message.contains(",critical"), "{message}");
    assert!(message.contains("jetsam kills 2"), "{message}");
    let conds = p.status.unwrap().conditions.unwrap_or_default();
    assert!(
        conds.iter().all(|c| c.type_ != "DisruptionTarget"),
        "{conds:?}"
    );
    let evs = env.wait_event("oom", "OOMKilled").await;
    let died: Vec<_> = evs.iter().filter(|(_, r, _)| r == "OOMKilled").collect();
    assert_eq!(died.len(), 1, "{evs:?}");
    assert_eq!(died[0].0, "Warning");
    assert!(died[0].2.contains("jetsam kills 2"), "{}", died[0].2);
    assert_eq!(
        env.metric("tart_kubelet_vm_deaths_total{cause=\"oom_killed\"}")
            .await,
        Some(1.0)
    );
    assert!(
        env.metric("tart_kubelet_vitals_samples_total{source=\"guest\",result=\"ok\"}")
            .await
            .is_some_and(|v| v >= 2.0)
    );
    assert!(env.agent_log().contains("vm died"));
}

/// The pids of fake-tart `run <vm>` processes.
fn run_pids(vm: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let argv: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
        if argv.len() > 2 && argv[1] == b"run" && argv[2] == vm.as_bytes() {
            out.push(pid);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_killed_from_outside_under_host_pressure_is_a_disruption_target() {
    let logs = tempfile::tempdir().unwrap();
    let host_file = logs.path().join("host-vitals");
    std::fs::write(&host_file, "vitals pressure=1 free_percent=40\n").unwrap();
    let host_arg = host_file.display().to_string();
    let args = [
        "--vitals-interval",
        "1s",
        "--vitals-host-file",
        host_arg.as_str(),
    ];
    let mut env = Env::new("hostkill", guest(GuestVitals::default()), &args).await;
    env.start_agent();
    env.create(&job(&env, "victim", "sleep 600")).await;
    let pod = env
        .wait_pod("victim", "Running", |p| phase(p) == "Running")
        .await;
    let vm = Env::vm_of(&pod);
    // The host runs out of memory: the agent sees it before the VM goes.
    std::fs::write(
        &host_file,
        "vitals pressure=4 free_percent=3 swap_used=1500.00M\n",
    )
    .unwrap();
    wait_for(WAIT, || async {
        (env.metric("tart_kubelet_host_memory_pressure_level").await == Some(4.0)).then_some(())
    })
    .await
    .expect("pressure gauge");
    assert_eq!(
        env.metric("tart_kubelet_host_swap_used_bytes").await,
        Some((1500u64 << 20) as f64)
    );
    let pids = run_pids(&vm);
    assert_eq!(pids.len(), 1, "one tart run for {vm}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pids[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let p = env
        .wait_pod("victim", "Failed", |p| phase(p) == "Failed")
        .await;
    let (reason, message) = terminated(&p);
    assert_eq!(reason, "Error", "{message}");
    assert!(message.contains("critical memory pressure"), "{message}");
    assert!(
        message.contains("host pressure critical free 3% swap 1500Mi"),
        "{message}"
    );
    let conds = p.status.unwrap().conditions.unwrap_or_default();
    let d = conds
        .iter()
        .find(|c| c.type_ == "DisruptionTarget")
        .unwrap_or_else(|| panic!("no DisruptionTarget in {conds:?}\n{}", env.agent_log()));
    assert_eq!(d.status, "True");
    assert_eq!(d.reason.as_deref(), Some("HostMemoryPressure"));
    assert!(
        d.message
            .as_deref()
            .unwrap_or_default()
            .contains("critical")
    );
    let evs = env.wait_event("victim", "HostMemoryPressure").await;
    assert!(
        evs.iter()
            .any(|(t, r, _)| t == "Warning" && r == "HostMemoryPressure")
    );
    assert_eq!(
        env.metric("tart_kubelet_vm_deaths_total{cause=\"host_memory_pressure\"}")
            .await,
        Some(1.0)
    );
}

async fn kubectl(env: &Env, args: &[&str]) -> (bool, String, String) {
    let kc = env.cp.kubeconfig_path().display().to_string();
    let mut all = vec!["--kubeconfig", kc.as_str()];
    all.extend_from_slice(args);
    run_program("kubectl", &all).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_summary_and_resource_metrics_serve_what_metrics_server_reads() {
    let knobs = guest(GuestVitals::default());
    let (env, _) = Env::with_kubelet_api("top", knobs, &["--vitals-interval", "1s"]).await;
    env.create(&job(&env, "busy", "sleep 600")).await;
    let pod = env
        .wait_pod("busy", "Running", |p| phase(p) == "Running")
        .await;
    let uid = pod.metadata.uid.clone().unwrap();
    let summary_path = format!("/api/v1/nodes/{}/proxy/stats/summary", env.node);
    let summary = wait_for(WAIT, || async {
        let (ok, out, _) = kubectl(&env, &["get", "--raw", &summary_path]).await;
        let v: serde_json::Value = serde_json::from_str(&out).ok().filter(|_| ok)?;
        let has_pod = v["pods"]
            .as_array()?
            .iter()
            .any(|p| p["podRef"]["uid"] == uid.as_str());
        has_pod.then_some(v)
    })
    .await
    .unwrap_or_else(|_| panic!("no summary with the Pod\n{}", env.agent_log()));
    // What metrics-server < 0.6 reads (its `summary` decoder): the node's and each
    // container's cpu.usageNanoCores / usageCoreNanoSeconds, memory.workingSetBytes and time.
    let node = &summary["node"];
    assert_eq!(node["nodeName"], env.node.as_str());
    assert!(node["startTime"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(
        node["cpu"]["usageCoreNanoSeconds"]
            .as_u64()
            .is_some_and(|v| v > 0)
    );
    assert!(
        node["memory"]["workingSetBytes"]
            .as_u64()
            .is_some_and(|v| v > 0)
    );
    assert!(node["cpu"]["time"].as_str().is_some());
    let p = summary["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["podRef"]["uid"] == uid.as_str())
        .unwrap();
    assert_eq!(p["podRef"]["name"], "busy");
    assert_eq!(p["podRef"]["namespace"], env.ns.as_str());
    let c = &p["containers"][0];
    assert_eq!(c["name"], "vm");
    assert!(
        c["cpu"]["usageCoreNanoSeconds"]
            .as_u64()
            .is_some_and(|v| v > 0)
    );
    assert!(
        c["memory"]["workingSetBytes"]
            .as_u64()
            .is_some_and(|v| v > 0)
    );
    assert!(c["startTime"].as_str().is_some());

    let metrics_path = format!("/api/v1/nodes/{}/proxy/metrics/resource", env.node);
    let (ok, text, err) = kubectl(&env, &["get", "--raw", &metrics_path]).await;
    assert!(ok, "{err}");
    assert!(
        text.contains(&format!(
            "container_memory_working_set_bytes{{container=\"vm\",namespace=\"{}\",pod=\"busy\"}}",
            env.ns
        )),
        "{text}"
    );
    assert!(text.contains("\nnode_cpu_usage_seconds_total "), "{text}");
    let mut promtool = tokio::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package)");
    use tokio::io::AsyncWriteExt;
    let mut stdin = promtool.stdin.take().unwrap();
    stdin.write_all(text.as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), promtool.wait_with_output())
        .await
        .expect("promtool deadline")
        .unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics:\n{}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        env.metric("tart_kubelet_vms_memory_resident_bytes")
            .await
            .is_some_and(|v| v > 0.0)
    );
}

/// The launcher run directly, as in `guest_launcher.rs`, with stand-ins that all fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_launchers_vitals_fail_open_and_never_touch_the_job() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("root");
    let shares = root.join("Volumes/My Shared Files");
    let (control, status) = (shares.join("control"), shares.join("status"));
    std::fs::create_dir_all(control.join("command")).unwrap();
    std::fs::create_dir_all(&status).unwrap();
    std::fs::write(control.join("version"), "1").unwrap();
    std::fs::write(control.join("command/0"), "sh").unwrap();
    std::fs::create_dir_all(control.join("args")).unwrap();
    std::fs::write(control.join("args/0"), "-c").unwrap();
    std::fs::write(control.join("args/1"), "sleep 2.5; exit 3").unwrap();
    let bin = t.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["vm_stat", "memory_pressure", "sysctl", "df"] {
        let p = bin.join(tool);
        std::fs::write(&p, "#!/bin/sh\necho garbage; exit 1\n").unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let launcher =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/guest/tart-guest-launcher");
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new("/bin/sh")
            .arg(&launcher)
            .env("TART_GUEST_ROOT", &root)
            .env("TART_GUEST_ON_EXIT", "exit")
            .env("TART_GUEST_VITALS_INTERVAL", "0")
            .env("PATH", path)
            .current_dir(t.path())
            .output(),
    )
    .await
    .expect("launcher deadline")
    .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        std::fs::read_to_string(status.join("exit_code")).unwrap(),
        "3\n"
    );
    let vitals = std::fs::read_to_string(status.join("vitals")).unwrap();
    let lines: Vec<&str> = vitals.lines().collect();
    // Interval 0 is clamped to 1 s: about three lines in 2.5 s, not one and not hundreds.
    assert!((2..=5).contains(&lines.len()), "{vitals}");
    for l in lines {
        assert!(l.starts_with("vitals ts="), "{l}");
        assert!(
            l.contains(" pressure= free_percent= page_size= free_pages="),
            "{l}"
        );
        assert!(
            l.contains(" swap_used= load1= disk_used_percent= jetsam_kills=0"),
            "{l}"
        );
    }
}

/// CPU seconds (user + system) and resident bytes of process `pid`.
fn cpu_and_rss(pid: u32) -> (f64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    (ticks as f64 / 100.0, rss_kib * 1024)
}

/// The agent's CPU (percent of a core) and RSS with two running VMs over `secs`, with
/// vitals sampled every `interval` (`0s`: off).
async fn agent_cost(interval: &str, secs: u64) -> (f64, u64) {
    let args = ["--vitals-interval", interval];
    let mut env = Env::new("cost", guest(GuestVitals::default()), &args).await;
    env.start_agent();
    for name in ["a", "b"] {
        env.create(&job(&env, name, "sleep 3600")).await;
    }
    for name in ["a", "b"] {
        env.wait_pod(name, "Running", |p| phase(p) == "Running")
            .await;
    }
    let pid = env.agent_pid().unwrap();
    // Settle: the start-up work is not the steady cost.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (cpu0, _) = cpu_and_rss(pid);
    let t0 = std::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let (cpu1, rss) = cpu_and_rss(pid);
    let pct = (cpu1 - cpu0) / t0.elapsed().as_secs_f64() * 100.0;
    (pct, rss)
}

/// The sampler's cost: agent CPU and RSS with two running VMs, vitals every 10 s vs off.
/// Run: `cargo test --release -p tart-kubelet-tests --test e2e pod_vitals:: -- --ignored --nocapture`
/// (`BENCH_VITALS_SECS` sets the window, default 120 s per setting; `BENCH_VITALS_INTERVAL`
/// the interval, default `10s`: a shorter one magnifies the sampler's share).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: about five minutes"]
async fn bench_vitals_sampler_cost_with_two_running_vms() {
    let secs = std::env::var("BENCH_VITALS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let (off_cpu, off_rss) = agent_cost("0s", secs).await;
    let interval = std::env::var("BENCH_VITALS_INTERVAL").unwrap_or_else(|_| "10s".into());
    let (on_cpu, on_rss) = agent_cost(&interval, secs).await;
    println!(
        "vitals off: agent CPU {off_cpu:.3} % of a core, RSS {:.1} MiB",
        off_rss as f64 / 1048576.0
    );
    println!(
        "vitals on ({interval}): agent CPU {on_cpu:.3} % of a core, RSS {:.1} MiB",
        on_rss as f64 / 1048576.0
    );
    println!("added: {:.3} % of a core", on_cpu - off_cpu);
}
