//! Fault handling of `TartCli` against fake-tart: hung and stalled commands are killed (group
//! and all) and retried, a pull waiting on the host lock is left alone, invalid UTF-8 is
//! harmless, `tart run` is detached and re-attachable, start failures are classified and the
//! stop sequence ends stubborn VMs.

use crate::tart_support;

use std::{ffi::OsString, path::Path, time::Duration};

use nix::unistd::{Pid, getsid};
use serde_json::json;
use tart::{
    AttemptOutcome, ErrorKind, ExitReason, RunningVm, SetOpts, StopOutcome, Tart, run::lock_holder,
};
use tart_support::{
    Home, Recorder, deadlines, fake_tart, group_or_pid_exists, poll, procs_of_home, vm,
};
use tokio::time::{Instant, timeout};

const IMAGE: &str = "ghcr.io/cirruslabs/macos-tahoe-base:latest";
const LIMIT: Duration = Duration::from_secs(60);

async fn t<F: std::future::Future>(f: F) -> F::Output {
    timeout(LIMIT, f).await.expect("operation hung")
}

/// A home with one cloned, stopped VM `name`.
async fn home_with_vm(name: &str) -> Home {
    let home = Home::new();
    home.knobs(json!({"latency_scale": 0.001}));
    let cli = home.cli().build();
    t(cli.clone_vm(IMAGE, &vm(name), None)).await.unwrap();
    home
}

#[tokio::test]
async fn hung_clone_is_killed_with_its_group_and_retried() {
    let home = home_with_vm("src").await;
    home.knobs(json!({
        "latency_scale": 0.001,
        // A helper in the hung process's group holds its pipes: only a group kill ends both,
        // and a wait for pipe EOF would never return.
        "rules": [{"op": "clone", "vm": "hung-target", "times": 1, "action": {"hang_with_child": true}}]
    }));
    let rec = Recorder::new();
    let deadline = Duration::from_secs(1);
    let cli = home
        .cli()
        .deadlines(deadlines(deadline))
        .observer(rec.clone())
        .build();

    let start = Instant::now();
    let task = tokio::spawn({
        let cli = cli.clone();
        async move { cli.clone_vm("src", &vm("hung-target"), None).await }
    });
    // The hung fake-tart and its helper, found by their TART_HOME while they hang.
    let hung = poll(
        Duration::from_secs(5),
        "the hung clone and its helper",
        || {
            let p = procs_of_home(home.path());
            (p.len() == 2).then(|| p.into_iter().min().unwrap())
        },
    )
    .await;
    t(task).await.unwrap().expect("second attempt succeeds");
    let elapsed = start.elapsed();

    let a = rec.attempts();
    assert_eq!(a.len(), 2, "{a:?}");
    assert_eq!(a[0].outcome, AttemptOutcome::Error(ErrorKind::Timeout));
    assert!(a[0].killed && a[0].will_retry);
    assert_eq!(a[1].outcome, AttemptOutcome::Ok);
    // attempts x deadline + backoff (0: a killed clone is retried at once) + 0.5 s.
    assert!(
        elapsed <= 2 * deadline + Duration::from_millis(500),
        "{elapsed:?}"
    );
    // The killed leader was reaped by us at once (no zombie of ours)...
    let leader = group_or_pid_exists(hung)
        .into_iter()
        .filter(|p| p.pid == hung)
        .collect::<Vec<_>>();
    assert!(leader.is_empty(), "leader left behind: {leader:?}");
    // ...and its helper died with the group: orphaned, it is init's to reap, so give init a
    // moment. A PID-only kill would leave it running, holding the pipes, for good.
    poll(
        Duration::from_secs(5),
        "the hung clone's group (its helper included) to be gone",
        || group_or_pid_exists(hung).is_empty().then_some(()),
    )
    .await;
    assert!(procs_of_home(home.path()).is_empty());
    let names: Vec<_> = t(cli.list())
        .await
        .unwrap()
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert!(names.contains(&"hung-target".to_owned()), "{names:?}");
}

#[tokio::test]
async fn transient_network_error_is_retried_and_permanent_one_is_not() {
    let home = Home::new();
    home.knobs(json!({
        "latency_scale": 0.001,
        "rules": [
            {"op": "pull", "vm": "ghcr.io/a/flaky:1", "times": 1,
             "action": {"fail": {"code": 1, "stderr": "Error: The request timed out."}}},
            {"op": "pull", "vm": "ghcr.io/a/denied:1",
             "action": {"fail": {"code": 1, "stderr": "Error: AuthFailed(why: \"got HTTP 401, but WWW-Authenticate header is missing\")"}}}
        ]
    }));
    let rec = Recorder::new();
    let cli = home.cli().observer(rec.clone()).build();
    t(cli.pull("ghcr.io/a/flaky:1", None)).await.unwrap();
    let a = rec.attempts();
    let counters = std::fs::read_to_string(home.path().join("fake-tart/counters.json"));
    let files: Vec<_> = std::fs::read_dir(home.path().join("fake-tart"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(a.len(), 2, "{a:?} counters {counters:?} files {files:?}");
    assert_eq!(a[0].outcome, AttemptOutcome::Error(ErrorKind::Network));
    assert!(!a[0].killed);

    let e = t(cli.pull("ghcr.io/a/denied:1", None)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert_eq!(rec.attempts().len(), 3, "auth failures are not retried");
}

#[tokio::test]
async fn stalled_pull_is_killed_by_the_watchdog_and_retried() {
    let home = Home::new();
    home.knobs(json!({
        "latency_scale": 0.01,
        "images": {"default": {"compressed_gb": 1.0}},
        "rules": [{"op": "pull", "times": 1, "action": {"stall_at_percent": 40}}]
    }));
    let rec = Recorder::new();
    let mut d = deadlines(Duration::from_secs(30));
    d.pull_stall = Duration::from_millis(500);
    let cli = home.cli().deadlines(d).observer(rec.clone()).build();
    let start = Instant::now();
    t(cli.pull(IMAGE, None)).await.unwrap();
    let a = rec.attempts();
    assert_eq!(a.len(), 2, "{a:?}");
    assert_eq!(a[0].outcome, AttemptOutcome::Error(ErrorKind::Stalled));
    assert!(a[0].killed);
    assert_eq!(a[1].outcome, AttemptOutcome::Ok);
    // Far below the 30 s overall deadline: the watchdog, not the deadline, ended it.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(procs_of_home(home.path()).is_empty());
}

#[tokio::test]
async fn pull_waiting_for_the_host_lock_is_not_a_stall() {
    let home = Home::new();
    home.knobs(json!({
        "latency_scale": 1.0,
        "images": {
            "ghcr.io/a/big:1": {"compressed_gb": 0.5},
            "ghcr.io/a/small:1": {"compressed_gb": 0.001}
        }
    }));
    // Pull A holds the ghcr.io host lock for about 5 s.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let program = Path::new(fake_tart()).to_owned();
    let env: Vec<(OsString, OsString)> = vec![
        ("TART_HOME".into(), home.path().into()),
        ("CI".into(), "1".into()),
    ];
    let a = tokio::spawn(async move {
        let args: Vec<OsString> = vec!["pull".into(), "ghcr.io/a/big:1".into()];
        let spec = tart::process::Spec {
            program: &program,
            args: &args,
            env: &env,
            env_clear: false,
            deadline: Duration::from_secs(60),
            stall: None,
            size_deadline: None,
            inflight: None,
            output_cap: 1 << 20,
        };
        tart::process::run(&spec, &mut |l| {
            let _ = tx.send(l.to_owned());
        })
        .await
        .unwrap()
    });
    // Once A prints `pulling disk`, it holds the host lock.
    loop {
        let line = t(rx.recv()).await.expect("pull A printed pulling disk");
        if line.starts_with("pulling disk") {
            break;
        }
    }

    let rec = Recorder::new();
    let mut d = deadlines(Duration::from_secs(30));
    // Progress lines come at most once a second (docs/reference/tart-cli.md §2.1), so the window
    // must exceed that.
    d.pull_stall = Duration::from_millis(1500);
    let cli = home.cli().deadlines(d).observer(rec.clone()).build();
    let start = Instant::now();
    t(cli.pull("ghcr.io/a/small:1", None)).await.unwrap();
    let waited = start.elapsed();
    let attempts = rec.attempts();
    assert_eq!(attempts.len(), 1, "never killed: {attempts:?}");
    assert_eq!(attempts[0].outcome, AttemptOutcome::Ok);
    assert!(
        waited > Duration::from_secs(3),
        "B really waited on the lock longer than the stall window ({waited:?})"
    );
    assert!(t(a).await.unwrap().success());
}

#[tokio::test]
async fn invalid_utf8_reaches_error_text_and_log_and_panics_nothing() {
    let home = home_with_vm("u8").await;
    home.knobs(json!({
        "latency_scale": 0.001,
        "rules": [
            {"op": "get", "times": 1, "action": {"invalid_utf8": true}},
            {"op": "set", "times": 1, "action": {"invalid_utf8": true}},
            {"op": "list", "times": 1, "action": {"invalid_utf8": true}},
            {"op": "run", "times": 1, "action": {"invalid_utf8": true}}
        ]
    }));
    let cli = home.cli().build();
    // Classification still works through the garbage.
    let e = t(cli.get(&vm("nope"))).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound);
    // An unclassified failure carries the garbage, decoded lossily, as its message.
    let shrink = SetOpts {
        disk_size_gb: Some(1),
        ..SetOpts::default()
    };
    let e = t(cli.set(&vm("u8"), &shrink)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Other);
    assert!(e.message.contains('\u{fffd}'), "{:?}", e.message);
    // Garbage before the JSON is a parse error, not a panic.
    let r = t(cli.list()).await;
    assert!(
        matches!(r, Err(ref e) if e.kind == ErrorKind::Other),
        "{r:?}"
    );
    // The run log keeps the bytes; reading it back is lossy.
    let opts = home.run_opts(&vm("u8"));
    let h = t(cli.run(&vm("u8"), &opts)).await.unwrap();
    let log = poll(Duration::from_secs(5), "garbage in the run log", || {
        let s = tart::run::read_tail(&opts.log_path, None);
        s.contains('\u{fffd}').then_some(s)
    })
    .await;
    assert!(log.contains("invalid utf-8"));
    assert_eq!(
        t(cli.stop(&h, Duration::from_secs(4))).await.unwrap(),
        StopOutcome::GuestShutdown
    );
}

#[tokio::test]
async fn run_survives_its_starter_and_is_found_again() {
    let home = home_with_vm("detached").await;
    home.knobs(json!({"latency_scale": 0.001}));
    let name = vm("detached");
    let opts = home.run_opts(&name);

    // Start it from a runtime that is then shut down, taking the reaper task and the handle
    // with it: the agent "dies".
    let pid = {
        let path = home.path().to_owned();
        let (name, opts) = (name.clone(), opts.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let pid = rt.block_on(async {
                let cli = tart::TartCli::builder(path).program(fake_tart()).build();
                let h = cli.run(&name, &opts).await.unwrap();
                h.pid()
            });
            drop(rt);
            pid
        })
        .join()
        .unwrap()
    };

    let p = Pid::from_raw(pid as i32);
    assert_eq!(
        getsid(Some(p)).unwrap(),
        p,
        "tart run leads its own session"
    );
    assert_ne!(getsid(None).unwrap(), p);
    assert!(nix::sys::signal::kill(p, None).is_ok(), "still running");
    let config = home.path().join("vms/detached/config.json");
    assert_eq!(lock_holder(&config).unwrap(), Some(pid));

    // A fresh client (the restarted agent) finds it by the lock.
    let cli = home.cli().build();
    let h = t(cli.attach(&name, &opts))
        .await
        .unwrap()
        .expect("found again");
    assert!(h.adopted());
    assert_eq!(h.pid(), pid);
    assert!(h.is_alive());
    assert_eq!(
        t(cli.stop(&h, Duration::from_secs(8))).await.unwrap(),
        StopOutcome::GuestShutdown
    );
    let exit = t(h.wait()).await;
    assert_eq!((exit.reason, exit.code), (ExitReason::Completed, Some(0)));
    assert!(t(cli.attach(&name, &opts)).await.unwrap().is_none());
    assert_eq!(lock_holder(&config).unwrap(), None);
}

#[tokio::test]
async fn early_run_failures_are_classified_as_host_faults() {
    let home = home_with_vm("limited").await;
    let cli = home.cli().build();
    t(cli.clone_vm("limited", &vm("auxlocked"), None))
        .await
        .unwrap();
    home.knobs(json!({
        "latency_scale": 0.001,
        "rules": [
            {"op": "run", "vm": "limited", "times": 1, "action": {"vm_limit": true}},
            {"op": "run", "vm": "auxlocked", "times": 1, "action": {"aux_storage_locked": true}}
        ]
    }));
    for (name, kind) in [
        ("limited", ErrorKind::VmLimit),
        ("auxlocked", ErrorKind::AuxStorageLocked),
    ] {
        let opts = home.run_opts(&vm(name));
        let e = t(cli.run(&vm(name), &opts)).await.unwrap_err();
        assert_eq!(e.kind, kind, "{e}");
        assert!(e.kind.is_host_fault());
        assert_eq!(e.exit_code, Some(1));
    }
}

#[tokio::test]
async fn stop_kills_a_vm_that_ignores_sigusr2_and_sigint() {
    let home = home_with_vm("stubborn").await;
    home.knobs(json!({
        "latency_scale": 0.001,
        "vms": {"stubborn": {"ignore_sigint": true, "ignore_sigusr2": true}}
    }));
    let cli = home.cli().build();
    let opts = home.run_opts(&vm("stubborn"));
    let h = t(cli.run(&vm("stubborn"), &opts)).await.unwrap();
    let start = Instant::now();
    let out = t(cli.stop(&h, Duration::from_secs(2))).await.unwrap();
    assert_eq!(out, StopOutcome::Killed);
    let exit = t(h.wait()).await;
    assert_eq!(exit.reason, ExitReason::Signaled);
    // grace 2 s: 1.5 s for the guest, then `tart stop --timeout 1`.
    assert!(start.elapsed() >= Duration::from_millis(1500));
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn guest_crash_is_reported_by_wait() {
    let home = home_with_vm("crashy").await;
    home.knobs(json!({
        "latency_scale": 0.001,
        "vms": {"crashy": {"guest_exit_after_ms": 1000000, "guest_exit_code": 1}}
    }));
    let cli = home.cli().build();
    let opts = tart::RunOpts {
        start_window: Duration::from_millis(50),
        ..home.run_opts(&vm("crashy"))
    };
    let h = t(cli.run(&vm("crashy"), &opts)).await.unwrap();
    let exit = t(h.wait()).await;
    assert_eq!((exit.reason, exit.code), (ExitReason::Failed, Some(1)));
}

#[tokio::test]
async fn exec_returns_guest_codes_and_only_tart_failures_are_errors() {
    let home = home_with_vm("ex").await;
    let rec = Recorder::new();
    let cli = home.cli().observer(rec.clone()).build();
    let name = vm("ex");
    let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let e = t(cli.exec(&name, &argv(&["true"]), Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotRunning);

    let opts = home.run_opts(&name);
    let h = t(cli.run(&name, &opts)).await.unwrap();
    // Hostile strings arrive verbatim as single words.
    let hostile = "$(rm -rf /); echo \"q\" 'q'";
    let out = t(cli.exec(&name, &argv(&["echo", hostile]), Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(
        (out.exit_code, out.stdout.as_str()),
        (0, format!("{hostile}\n").as_str())
    );
    // A guest failure, even with exit 2 or 64, is the guest's business.
    for code in ["2", "64"] {
        let out = t(cli.exec(&name, &argv(&["exit", code]), Duration::from_secs(5)))
            .await
            .unwrap();
        assert_eq!(out.exit_code.to_string(), code);
    }
    // A hung guest command hits the caller's deadline and is not retried.
    let before = rec.attempts().len();
    let e = t(cli.exec(&name, &argv(&["sleep", "30"]), Duration::from_millis(300)))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout);
    assert_eq!(rec.attempts().len(), before + 1);
    // An unreachable guest agent is Tart's failure.
    home.knobs(json!({
        "latency_scale": 0.001,
        "vms": {"ex": {"exec_unreachable": true, "exec_connect_ms": 1000}}
    }));
    let e = t(cli.exec(&name, &argv(&["true"]), Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Other);
    assert!(
        e.message.contains("Failed to connect to the VM"),
        "{}",
        e.message
    );
    t(cli.stop(&h, Duration::from_secs(4))).await.unwrap();
}

#[tokio::test]
async fn registry_credentials_go_through_the_environment() {
    let home = Home::new();
    home.knobs(json!({
        "latency_scale": 0.001,
        "images": {"ghcr.io/priv/img:1": {"auth": {"username": "robot", "password": "s3cr3t"}}}
    }));
    let cli = home.cli().build();
    let e = t(cli.pull("ghcr.io/priv/img:1", None)).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth, "{e}");
    let wrong = tart::Credentials {
        username: "robot".into(),
        password: "nope".into(),
        hostname: None,
    };
    let e = t(cli.pull("ghcr.io/priv/img:1", Some(&wrong)))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Auth);
    assert!(
        !format!("{e} {e:?} {wrong:?}").contains("nope"),
        "no secret in errors or Debug"
    );
    let right = tart::Credentials {
        password: "s3cr3t".into(),
        ..wrong
    };
    t(cli.clone_vm("ghcr.io/priv/img:1", &vm("priv"), Some(&right)))
        .await
        .unwrap();
}
