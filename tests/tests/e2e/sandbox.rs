//! The README's main command, small: one simulated Mac mini, three CI-runner Pods. It must
//! exit 0, write the report with its documented keys, and every invariant must hold.
use std::time::Duration;

use tokio::time::timeout;

#[tokio::test]
async fn a_small_steady_sandbox_run_holds_every_invariant_and_writes_the_report() {
    let (stdout, r) =
        run_to_success(&["--nodes", "1", "--pods", "3", "--latency-scale", "0.01"]).await;
    assert!(stdout.contains("result: ok"), "{stdout}");
    assert_eq!(r["schema"], 1);
    assert_eq!(r["ok"], true);
    assert_eq!(r["pods"]["created"], 3);
    assert_eq!(r["pods"]["succeeded"], 3);
    assert_eq!(
        r["stages_seconds"]["boot"]["count"], 3,
        "boot counted once per Pod"
    );
    assert_eq!(r["stages_seconds"]["provision_delay"]["count"], 3);
    assert_eq!(
        r["guest_checks"]["passed"], 3,
        "every job ran in the guest and saw its secret"
    );
    let names: Vec<&str> = r["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    for must in [
        "no_stranded_finalizer",
        "no_orphan_vm",
        "no_process_left",
        "no_control_plane_process_left",
        "pods_in_expected_terminal_state",
        "each_pod_counted_once_per_histogram",
        "jobs_saw_their_secret",
    ] {
        assert!(
            names.contains(&must),
            "report lacks invariant {must}: {names:?}"
        );
    }
    assert!(r["agents"][0]["rss_bytes"].as_u64().unwrap() > 0);
    // Read back from the running processes and the file system, not echoed from the options.
    assert_eq!(r["host"]["control_plane_nice"], 10, "{stdout}");
    let expected_fs = if std::path::Path::new("/dev/shm").is_dir() {
        "tmpfs"
    } else {
        "disk"
    };
    assert_eq!(r["host"]["agent_dirs"], expected_fs, "{stdout}");
    assert!(
        stdout.contains("host: control plane at nice 10"),
        "{stdout}"
    );
}

/// `image-roll`, small: two Macs on one registry, six Pods. On demand, Pods wait on the new
/// image's pull; with pre-pull the fleet holds it before the Pods switch, so none waits and
/// the pulls at once stay within the cap. Every invariant holds.
#[tokio::test]
async fn image_roll_measures_both_strategies_and_pre_pull_spares_the_pods_a_pull() {
    let (stdout, r) = run_to_success(&[
        "--scenario",
        "image-roll",
        "--nodes",
        "2",
        "--pods",
        "6",
        "--latency-scale",
        "0.01",
        "--max-concurrent-pulls",
        "1",
    ])
    .await;
    let s = r["image_roll"]["strategies"].as_array().unwrap();
    assert_eq!(s.len(), 2, "{stdout}");
    let (on_demand, prepull) = (&s[0], &s[1]);
    assert_eq!(on_demand["strategy"], "on_demand");
    assert_eq!(prepull["strategy"], "prepull");
    assert_eq!(on_demand["roll_completed"], true, "{stdout}");
    assert!(
        on_demand["pods_waited_on_pull"].as_u64().unwrap() >= 1,
        "{stdout}"
    );
    assert!(on_demand["peak_concurrent_pulls"].as_u64().unwrap() >= 1);
    assert!(
        on_demand["provision_delay_seconds"]["during"]["count"]
            .as_u64()
            .unwrap()
            >= 1
    );
    assert_eq!(prepull["roll_completed"], true, "{stdout}");
    assert_eq!(prepull["pull_cap"], 1);
    assert_eq!(prepull["pods_after_roll_began"], 2, "{stdout}");
    assert_eq!(prepull["pods_waited_on_pull"], 0, "{stdout}");
    assert!(
        prepull["peak_concurrent_pulls"].as_u64().unwrap() <= 1,
        "{stdout}"
    );
    assert!(
        stdout.contains("pre-pull + pacing (v2 -> v3): 0/2 Pods waited"),
        "{stdout}"
    );
}

/// The secret check can fail: with a token in the Secret other than the one the jobs expect,
/// every job exits non-zero in the guest, `jobs_saw_their_secret` fails (and, the Pods ending
/// Failed with the job's code, the terminal-state check) and so does the run, while the
/// teardown checks still hold.
/// `fleet`, small: three Macs, twelve Pods, a pre-pull roll with a cap of two. The report's
/// `fleet` section is there and consistent: every Pod's watch delay and scheduler-to-running
/// measured, the roll completed with Pods on the new image, never more pulls than the cap,
/// every agent in the spreads; every invariant holds.
#[tokio::test]
#[ignore = "30-45 s (a control plane, three agents, a roll): run with --ignored"]
async fn a_small_fleet_run_reports_a_consistent_fleet_section() {
    let (stdout, r) = run_to_success(&[
        "--scenario",
        "fleet",
        "--nodes",
        "3",
        "--pods",
        "12",
        "--job-ms",
        "120000",
        "--prepull-period-seconds",
        "2",
        "--max-concurrent-pulls",
        "2",
        "--max-concurrent-percent",
        "100",
    ])
    .await;
    assert_eq!(r["scenario"], "fleet");
    assert_eq!(r["pods"]["succeeded"], 12, "{stdout}");
    let f = &r["fleet"];
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert_eq!(f["slots"], 6);
    assert!(num(&f["api"]["requests_per_second"]) > 0.0, "{stdout}");
    assert!(num(&f["api"]["agents_by_verb"]["patch"]) > 0.0, "{stdout}");
    assert!(num(&f["api"]["by_user"]["scheduler"]) > 0.0, "{stdout}");
    for key in [
        "watch_delay_seconds",
        "scheduling_seconds",
        "scheduler_to_running_seconds",
    ] {
        let s = &f[key];
        assert_eq!(s["count"], 12, "{key}: every Pod measured\n{stdout}");
        assert!(num(&s["min"]) >= 0.0, "{key}: {s}");
        assert!(
            num(&s["p50"]) <= num(&s["p99"]) && num(&s["p99"]) <= num(&s["max"]),
            "{key}: {s}"
        );
    }
    let roll = &f["roll"];
    assert_eq!(roll["completed"], true, "{stdout}");
    assert_eq!(roll["pull_cap"], 2);
    assert!(roll["pods_on_new_image"].as_u64().unwrap() >= 1, "{stdout}");
    assert!(
        roll["peak_concurrent_pulls"].as_u64().unwrap() <= 2,
        "{stdout}"
    );
    assert_eq!(
        roll["token_wait_seconds"]["count"], 3,
        "a token seen on every node\n{stdout}"
    );
    assert_eq!(roll["nodes"].as_object().unwrap().len(), 3);
    assert_eq!(f["agents"]["rss_mib"]["count"], 3);
    assert!(num(&f["agents"]["threads"]["min"]) >= 1.0);
    assert!(num(&f["cpu"]["machine_busy"]) > 0.0);
    assert!(num(&f["cpu"]["kube_apiserver"]) > 0.0);
    let held: Vec<(&str, bool)> = r["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["name"].as_str().unwrap(), i["ok"].as_bool().unwrap()))
        .collect();
    for must in ["fleet_roll_completed", "fleet_prepull_within_cap"] {
        assert!(held.contains(&(must, true)), "{must}: {held:?}");
    }
    assert_eq!(r["ok"], true, "{stdout}");
}

#[tokio::test]
async fn jobs_given_another_token_fail_the_secret_invariant() {
    let (status, stdout, r) = run_sandbox(&[
        "--nodes",
        "1",
        "--pods",
        "2",
        "--latency-scale",
        "0.01",
        "--wrong-token",
    ])
    .await;
    assert_eq!(status.code(), Some(1), "{stdout}");
    assert_eq!(r["guest_checks"]["secret_rejected"], 2, "{stdout}");
    assert_eq!(r["guest_checks"]["passed"], 0, "{stdout}");
    // The job's exit code is the Pod's: the Pods end Failed, which the terminal-state
    // invariant reports too.
    for inv in r["invariants"].as_array().unwrap() {
        let secret = inv["name"] == "jobs_saw_their_secret";
        let terminal = inv["name"] == "pods_in_expected_terminal_state";
        assert_eq!(inv["ok"], !(secret || terminal), "{inv}\n{stdout}");
        if secret {
            assert!(
                inv["detail"].as_str().unwrap().contains("job exited 3"),
                "{inv}"
            );
        }
    }
}

/// Ctrl-C in a terminal (SIGINT to the sandbox's process group) while VMs run: the agents,
/// in groups of their own, are still there to delete the Pods and their VMs; then every
/// process the sandbox started is gone and the report says so.
#[tokio::test]
async fn ctrl_c_during_the_workload_tears_everything_down() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let report_arg = report.to_str().unwrap();
    let (mut child, pgid, mut lines) = spawn_sandbox(
        dir.path(),
        &[
            "--nodes",
            "1",
            "--pods",
            "20",
            "--latency-scale",
            "0.02",
            "--report",
            report_arg,
        ],
    );
    // Wait until at least one VM has run: the status line reads "... ran N ...".
    let (running, seen) = read_until(&mut lines, |l| {
        l.split("ran ").nth(1).is_some_and(|r| !r.starts_with('0'))
    })
    .await;
    assert!(running, "no VM ran:\n{seen}");
    let (status, rest) = ctrl_c(&mut child, pgid, &mut lines).await;
    assert_eq!(
        status.code(),
        Some(1),
        "an interrupted run is not a success:\n{rest}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for must in [
        "no_stranded_finalizer",
        "no_orphan_vm",
        "agents_stopped_cleanly",
        "no_process_left",
        "no_control_plane_process_left",
    ] {
        let inv = r["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == must)
            .unwrap_or_else(|| panic!("no invariant {must}:\n{rest}"));
        assert_eq!(inv["ok"], true, "{must}: {inv}\n{rest}");
    }
    let left = tart_kubelet_tests::cluster::processes_mentioning(dir.path());
    assert!(left.is_empty(), "left running: {left:?}\n{rest}");
}

/// `--keep` prints an interim report and holds everything up until Ctrl-C: that report must
/// not say FAILED when nothing failed (the teardown checks are pending, not failed); Ctrl-C
/// then tears down and the final report is ok.
#[tokio::test]
async fn keep_prints_an_honest_interim_report_then_tears_down_on_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, pgid, mut lines) = spawn_sandbox(
        dir.path(),
        &[
            "--nodes",
            "1",
            "--pods",
            "1",
            "--latency-scale",
            "0.01",
            "--keep",
        ],
    );
    let (up, interim) = read_until(&mut lines, |l| l.starts_with("everything is up")).await;
    assert!(up, "never held up:\n{interim}");
    assert!(!interim.contains("FAILED"), "{interim}");
    assert!(
        interim.contains("result so far: ok") && interim.contains("pending"),
        "{interim}"
    );
    let (status, rest) = ctrl_c(&mut child, pgid, &mut lines).await;
    assert!(status.success(), "{rest}");
    assert!(rest.contains("result: ok"), "{rest}");
}

type Lines = tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>;

/// The sandbox binary with `args`, in a process group of its own (as a terminal starts it),
/// creating everything (control plane run dir, fake-tart homes) under `tmp`.
/// Runs the sandbox with `args` and `--report`; it must exit 0 within 300 s. Returns its
/// stdout and the report.
async fn run_to_success(args: &[&str]) -> (String, serde_json::Value) {
    let (status, stdout, r) = run_sandbox(args).await;
    assert!(status.success(), "sandbox failed:\n{stdout}");
    (stdout, r)
}

/// Runs the sandbox with `args` and `--report`; it must end within 300 s and write the report.
/// Returns its exit status, its stdout (and stderr) and the report.
async fn run_sandbox(args: &[&str]) -> (std::process::ExitStatus, String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_sandbox"))
        .args(args)
        .arg("--report")
        .arg(&report)
        .kill_on_drop(true)
        .output();
    let out = timeout(Duration::from_secs(300), run)
        .await
        .expect("sandbox did not finish within 300 s")
        .expect("spawn sandbox");
    let stdout = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no report ({e}); sandbox printed:\n{stdout}"));
    (out.status, stdout, serde_json::from_str(&text).unwrap())
}

fn spawn_sandbox(
    tmp: &std::path::Path,
    args: &[&str],
) -> (tokio::process::Child, nix::unistd::Pid, Lines) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_sandbox"))
        .args(args)
        .env("TMPDIR", tmp)
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pgid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    let lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, pgid, lines)
}

/// Read lines until one matches `pred` (true) or the output ends or 240 s pass (false); also
/// returns what was read.
async fn read_until(lines: &mut Lines, pred: impl Fn(&str) -> bool) -> (bool, String) {
    let mut seen = String::new();
    let found = timeout(Duration::from_secs(240), async {
        while let Ok(Some(l)) = lines.next_line().await {
            seen.push_str(&l);
            seen.push('\n');
            if pred(&l) {
                return true;
            }
        }
        false
    })
    .await;
    (matches!(found, Ok(true)), seen)
}

/// Send a terminal's Ctrl-C (SIGINT to the process group) and collect the rest of the output
/// and the exit status; the sandbox must end within 240 s.
async fn ctrl_c(
    child: &mut tokio::process::Child,
    pgid: nix::unistd::Pid,
    lines: &mut Lines,
) -> (std::process::ExitStatus, String) {
    nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGINT).unwrap();
    let mut rest = String::new();
    let ended = timeout(Duration::from_secs(240), async {
        while let Ok(Some(l)) = lines.next_line().await {
            rest.push_str(&l);
            rest.push('\n');
        }
        child.wait().await.unwrap()
    })
    .await;
    match ended {
        Ok(status) => (status, rest),
        Err(_) => panic!("sandbox did not end within 240 s of Ctrl-C; it printed:\n{rest}"),
    }
}
