//! Done-when tests of issue 3 that need a control plane of their own (or none): stop and the
//! owner-pid watchdog leave nothing running, the apiserver restarts alone, a port conflict is
//! retried, start-to-ready stays within 15 s, and the scripts fail with clear errors.
//!
//! Tests that start a control plane hold `PRIVATE`, so at most one of them runs at a time (each
//! is ~400 MB and two cores are shared by everything). This module starts no shared control
//! plane, but the other modules' tests run in the same process beside it, so in a full run the
//! timing figure is measured under their load.
use std::{path::Path, time::Duration};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use tart_kubelet_tests::cluster::testing::{create_namespace, run_program};
use tart_kubelet_tests::cluster::{self, ControlPlane, processes_of_run, unique, wait_for};
use tokio::time::timeout;

/// Deadline for one API call in these tests.
const CALL: Duration = Duration::from_secs(20);

static PRIVATE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

// === private control planes ===

fn start_private(label: &str) -> ControlPlane {
    cluster::build().expect("build.sh");
    ControlPlane::start_private(label).unwrap_or_else(|e| panic!("start: {e:#}"))
}

fn assert_nothing_left(run: &Path) {
    let left = processes_of_run(run);
    assert!(
        left.is_empty(),
        "processes of {} still running: {left:?}",
        run.display()
    );
}

#[tokio::test]
async fn stop_leaves_no_control_plane_process_of_the_run() {
    let _one = PRIVATE.lock().await;
    let cp = start_private("stop");
    let running = processes_of_run(cp.run_dir());
    for c in cluster::COMPONENTS {
        let pid = cp
            .pid_of(c)
            .unwrap_or_else(|| panic!("no pid file for {c}"));
        assert!(
            running.iter().any(|(p, _)| *p == pid),
            "{c} (pid {pid}) not running: {running:?}"
        );
    }
    let watchdog = cp.pid_of("watchdog").expect("watchdog pid");
    cp.stop().expect("stop.sh");
    assert_nothing_left(cp.run_dir());
    assert!(
        !Path::new(&format!("/proc/{watchdog}/cmdline")).exists() || {
            let cmd = std::fs::read(format!("/proc/{watchdog}/cmdline")).unwrap_or_default();
            !String::from_utf8_lossy(&cmd).contains(cp.run_dir().to_str().unwrap())
        },
        "the watchdog survived stop"
    );
    assert!(
        cp.logs_dir().join("kube-apiserver.log").exists(),
        "logs were not kept"
    );
}

#[tokio::test]
async fn owner_exit_makes_the_watchdog_stop_everything() {
    let _one = PRIVATE.lock().await;
    cluster::build().expect("build.sh");
    let mut owner = tokio::process::Command::new("sleep")
        .arg("600")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let cp = ControlPlane::start_owned_by("watchdog", owner.id().unwrap())
        .unwrap_or_else(|e| panic!("start: {e:#}"));
    assert_eq!(processes_of_run(cp.run_dir()).len(), 4);
    owner.kill().await.unwrap();
    wait_for(Duration::from_secs(30), || async {
        processes_of_run(cp.run_dir()).is_empty().then_some(())
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "watchdog did not stop the run: {e}\n{}",
            cp.log_tail("watchdog", 10)
        )
    });
}

#[tokio::test]
async fn apiserver_restarts_alone_on_the_same_port_and_etcd() {
    let _one = PRIVATE.lock().await;
    let cp = start_private("restart");
    let client = cp.admin_client().await;
    let ns = unique("survives");
    create_namespace(&client, &ns).await;
    let (etcd, old) = (
        cp.pid_of("etcd").unwrap(),
        cp.pid_of("kube-apiserver").unwrap(),
    );

    cp.stop_apiserver().await;
    let r = timeout(CALL, Api::<Namespace>::all(client.clone()).get(&ns))
        .await
        .unwrap();
    assert!(r.is_err(), "apiserver still answers after stop");
    assert!(cp.pid_of("kube-apiserver").is_none());
    assert!(
        processes_of_run(cp.run_dir())
            .iter()
            .any(|(p, _)| *p == etcd),
        "etcd stopped too"
    );

    cp.start_apiserver().await;
    assert_ne!(cp.pid_of("kube-apiserver"), Some(old));
    let client = cp.admin_client().await; // same URL, fresh connections
    let got = timeout(CALL, Api::<Namespace>::all(client).get(&ns))
        .await
        .unwrap();
    assert!(got.is_ok(), "namespace lost across the restart: {got:?}");
}

#[tokio::test]
async fn warm_start_is_ready_within_15_seconds_median_of_three() {
    let _one = PRIVATE.lock().await;
    let warm_build = cluster::build().expect("build.sh");
    let cold = std::fs::read_to_string("/tmp/cp/build.log")
        .ok()
        .and_then(|log| {
            log.lines()
                .rev()
                .find(|l| l.starts_with("real"))
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "real n/a (no /tmp/cp/build.log)".to_owned());
    println!("cold build.sh (from /tmp/cp/build.log): {cold}");
    println!("warm build.sh: {warm_build:?}");
    let mut times = Vec::new();
    for i in 0..3 {
        let cp =
            ControlPlane::start_private(&format!("timing{i}")).unwrap_or_else(|e| panic!("{e:#}"));
        println!("warm start-to-ready #{}: {:?}", i + 1, cp.start_to_ready());
        times.push(cp.start_to_ready());
        cp.stop().expect("stop.sh");
        assert_nothing_left(cp.run_dir());
    }
    times.sort();
    println!("warm start-to-ready median of 3: {:?}", times[1]);
    assert!(
        times[1] <= Duration::from_secs(15),
        "median start-to-ready {:?} > 15 s",
        times[1]
    );
}

#[tokio::test]
async fn taken_apiserver_port_makes_start_retry_with_new_ports() {
    let _one = PRIVATE.lock().await;
    cluster::build().expect("build.sh");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::Builder::new()
        .prefix("cp-conflict")
        .tempdir()
        .unwrap();
    let run_dir = dir.path().to_str().unwrap();
    let pid = std::process::id().to_string();
    let start = tokio::process::Command::new(cluster::scripts_dir().join("start.sh"))
        .args(["--run", run_dir, "--owner-pid", &pid])
        // The apiserver's port (3rd) is taken; the other forced ports are picked free.
        .env("START_PORTS", format!("0 0 {port} 0 0"))
        .kill_on_drop(true)
        .output();
    let out = timeout(Duration::from_secs(150), start)
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let env = std::fs::read_to_string(dir.path().join("env")).unwrap_or_default();
    let stop = cluster::scripts_dir().join("stop.sh");
    let (stopped, _, stop_err) = run_program(stop.to_str().unwrap(), &[run_dir]).await;
    assert!(out.status.success(), "start.sh failed:\n{stderr}");
    assert!(
        stderr.contains("port conflict on attempt 1"),
        "no retry:\n{stderr}"
    );
    assert!(
        !env.contains(&format!("APISERVER_PORT={port}\n")),
        "kept the taken port:\n{env}"
    );
    assert!(stopped, "stop.sh: {stop_err}");
    assert_nothing_left(dir.path());
}

// === clear errors ===

#[tokio::test]
async fn start_without_built_binaries_says_to_run_build_sh() {
    let dir = tempfile::tempdir().unwrap();
    let start = cluster::scripts_dir().join("start.sh");
    let out = tokio::process::Command::new(&start)
        .args(["--run", dir.path().to_str().unwrap()])
        .env("BIN", dir.path().join("no-bin"))
        .kill_on_drop(true)
        .output();
    let out = timeout(Duration::from_secs(30), out)
        .await
        .unwrap()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("run tests/cluster/build.sh first"), "{err}");
    assert!(processes_of_run(dir.path()).is_empty());
}

#[tokio::test]
async fn build_sh_as_non_root_with_nothing_cached_says_it_needs_root() {
    let empty = tempfile::tempdir().unwrap();
    let build = cluster::scripts_dir().join("build.sh");
    let cache = format!("KUBE_CACHE={}", empty.path().join("cache").display());
    let build = build.to_str().unwrap();
    // As root (CI), drop to nobody; as another user, run as that user.
    let (ok, _, err) = if nix::unistd::geteuid().is_root() {
        let args = [
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "env",
            &cache,
            "bash",
            build,
        ];
        run_program("setpriv", &args).await
    } else {
        run_program("env", &[&cache, "bash", build]).await
    };
    assert!(!ok, "build.sh succeeded without root and without a cache");
    assert!(err.contains("must run as root"), "{err}");
    assert!(
        err.contains("kube-binaries"),
        "does not say what is missing: {err}"
    );
}
