//! fake-tart's VM lifecycle against the spec (docs/reference/tart-cli.md §2.6-§2.11, §3): `run`
//! holds a classic POSIX lock on config.json, signals, `stop`'s algorithm, `ip`, `exec`, `suspend`.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tart_kubelet_tests::fake::{FakeHome, Knobs, VmKnob, poll_until};
use tokio::process::Child;

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");

pub(crate) fn home_with(names: &[&str]) -> FakeHome {
    let h = FakeHome::new().expect("temp home");
    for n in names {
        h.create_vm(n).unwrap();
    }
    h
}

/// Starts `tart run <name> <extra>` and waits until it holds the VM's lock.
pub(crate) async fn start(h: &FakeHome, name: &str, extra: &[&str]) -> Child {
    let child = h
        .command(FT)
        .arg("run")
        .arg(name)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        poll_until(Duration::from_secs(10), || h.run_record(name).is_some()).await,
        "run never took the lock"
    );
    child
}

pub(crate) async fn finish(child: Child) -> Output {
    tokio::time::timeout(Duration::from_secs(15), child.wait_with_output())
        .await
        .expect("run did not exit")
        .unwrap()
}

pub(crate) fn signal(child: &Child, sig: Signal) {
    kill(Pid::from_raw(child.id().unwrap() as i32), sig).unwrap();
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test]
async fn run_holds_a_posix_lock_that_shows_it_running_with_its_pid() {
    let h = home_with(&["vm1"]);
    let child = start(&h, "vm1", &["--no-graphics", "--dir", "src:/tmp:ro"]).await;
    assert_eq!(
        h.run_pid("vm1"),
        Some(child.id().unwrap() as i32),
        "F_GETLK must report the run PID"
    );
    let get = h
        .tart(FT, &["get", "vm1", "--format", "json"])
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&get.stdout).unwrap();
    assert_eq!(
        (v["State"].as_str(), v["Running"].as_bool()),
        (Some("running"), Some(true))
    );
    let record = h.run_record("vm1").unwrap();
    assert_eq!(
        record["args"],
        serde_json::json!(["run", "vm1", "--no-graphics", "--dir", "src:/tmp:ro"])
    );
    // A second run of the same VM: already running, exit 2 (docs/reference/tart-cli.md §1.4).
    let again = h.tart(FT, &["run", "vm1"]).await.unwrap();
    assert_eq!(
        (again.code, again.stderr.as_str()),
        (Some(2), "VM \"vm1\" is already running!\n")
    );
    // A set rewrites config.json in place: the lock (and so "running") survives
    // (docs/reference/tart-cli.md §2.3).
    assert_eq!(
        h.tart(FT, &["set", "vm1", "--cpu", "8"])
            .await
            .unwrap()
            .code,
        Some(0)
    );
    assert!(h.is_running("vm1"));
    // delete refuses a running VM.
    let del = h.tart(FT, &["delete", "vm1"]).await.unwrap();
    assert_eq!(
        (del.code, del.stderr.as_str()),
        (Some(1), "VM \"vm1\" is running\n")
    );
    let stop = h.tart(FT, &["stop", "vm1"]).await.unwrap();
    assert_eq!((stop.code, stop.stdout.as_str()), (Some(0), ""));
    let out = finish(child).await;
    assert_eq!(
        (out.status.code(), stdout(&out).as_str()),
        (Some(0), "Stopping VM...\n")
    );
    assert!(!h.is_running("vm1"));
}

#[tokio::test]
async fn run_of_a_missing_vm_is_exit_1_with_the_error_prefix() {
    let h = home_with(&[]);
    let out = h.tart(FT, &["run", "ghost"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            Some(1),
            "Error: the specified VM \"ghost\" does not exist\n"
        )
    );
}

#[tokio::test]
async fn run_rejects_conflicting_network_flags_and_unnamed_shared_dirs() {
    let h = home_with(&["vm1"]);
    let out = h
        .tart(FT, &["run", "vm1", "--net-softnet", "--net-bridged", "en0"])
        .await
        .unwrap();
    assert_eq!(out.code, Some(64));
    assert!(
        out.stderr.starts_with(
            "Error: --net-bridged, --net-softnet and --net-host are mutually exclusive"
        )
    );
    let out = h
        .tart(FT, &["run", "vm1", "--dir", "/a", "--dir", "/b"])
        .await
        .unwrap();
    assert_eq!(out.code, Some(64));
    assert!(out.stderr.starts_with("Error: invalid --dir syntax: for multiple directory shares each one of them should be named\nUsage: tart <subcommand>"));
    assert!(!h.is_running("vm1"));
}

#[tokio::test]
async fn stop_of_a_vm_that_is_not_running_or_missing_is_exit_2() {
    let h = home_with(&["vm1"]);
    let out = h.tart(FT, &["stop", "vm1"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(2), "VM \"vm1\" is not running\n")
    );
    assert_eq!(h.tart(FT, &["stop", "nope"]).await.unwrap().code, Some(2));
}

#[tokio::test]
async fn stop_sigkills_a_run_that_ignores_sigint_after_the_timeout() {
    let h = home_with(&["vm1"]);
    h.set_knobs(&Knobs::new().with_vm("vm1", VmKnob::default().ignoring_sigint()))
        .unwrap();
    let child = start(&h, "vm1", &[]).await;
    let began = Instant::now();
    let out = h
        .tart(FT, &["stop", "vm1", "--timeout", "1"])
        .await
        .unwrap();
    let took = began.elapsed();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "stop took {took:?}"
    );
    let out = finish(child).await;
    assert_eq!(out.status.code(), None, "run must die by SIGKILL");
    assert!(!stdout(&out).contains("Stopping VM..."));
}

#[tokio::test]
async fn sigusr2_asks_the_guest_to_stop_and_run_exits_0_after_the_shutdown() {
    let h = home_with(&["vm1"]);
    h.set_knobs(
        &Knobs::new()
            .with_latency_scale(1.0)
            .with_vm("*", VmKnob::default().with_shutdown_ms(300)),
    )
    .unwrap();
    let child = start(&h, "vm1", &[]).await;
    let began = Instant::now();
    signal(&child, Signal::SIGUSR2);
    let out = finish(child).await;
    assert!(began.elapsed() >= Duration::from_millis(300));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        "Requesting guest OS to stop...\nguest has stopped the virtual machine\n"
    );
}

#[tokio::test]
async fn a_guest_ignoring_sigusr2_keeps_running_until_sigint() {
    let h = home_with(&["vm1"]);
    h.set_knobs(&Knobs::new().with_vm("vm1", VmKnob::default().ignoring_sigusr2()))
        .unwrap();
    let child = start(&h, "vm1", &[]).await;
    signal(&child, Signal::SIGUSR2);
    // The default shutdown would take 0 ms at scale 0; the guest is still up well after.
    assert!(!poll_until(Duration::from_millis(300), || !h.is_running("vm1")).await);
    signal(&child, Signal::SIGINT);
    let out = finish(child).await;
    assert_eq!(
        stdout(&out),
        "Requesting guest OS to stop...\nStopping VM...\n"
    );
}

#[tokio::test]
async fn sigusr1_suspends_only_a_suspendable_vm_and_stop_discards_the_snapshot() {
    let h = home_with(&["vm1", "vm2"]);
    let child = start(&h, "vm1", &["--suspendable"]).await;
    assert_eq!(h.tart(FT, &["suspend", "vm1"]).await.unwrap().code, Some(0));
    let out = finish(child).await;
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        "pausing VM to take a snapshot...\ncreating a snapshot...\nsnapshot created successfully! shutting down the VM...\n"
    );
    let get = h
        .tart(FT, &["get", "vm1", "--format", "json"])
        .await
        .unwrap();
    assert!(
        get.stdout.contains("\"State\" : \"suspended\""),
        "{}",
        get.stdout
    );
    // Run again: restored from the snapshot.
    let child = start(&h, "vm1", &[]).await;
    signal(&child, Signal::SIGINT);
    let out = finish(child).await;
    assert_eq!(
        stdout(&out),
        "restoring VM state from a snapshot...\nresuming VM...\nStopping VM...\n"
    );

    let child = start(&h, "vm2", &[]).await;
    signal(&child, Signal::SIGUSR1);
    let out = finish(child).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).starts_with("Failed to suspend the VM: "),
        "on stdout, not stderr"
    );
    let out = h.tart(FT, &["suspend", "vm2"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(2), "VM \"VM \"vm2\" is not running\" is not running\n")
    );
}

#[tokio::test]
async fn stop_of_a_suspended_vm_deletes_the_snapshot() {
    let h = home_with(&["vm1"]);
    std::fs::write(h.vm_dir("vm1").join("state.vzvmsave"), b"x").unwrap();
    let out = h.tart(FT, &["stop", "vm1"]).await.unwrap();
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), ""));
    assert!(!h.vm_dir("vm1").join("state.vzvmsave").exists());
}

#[tokio::test]
async fn sigterm_kills_run_at_once_and_releases_the_lock() {
    let h = home_with(&["vm1"]);
    let child = start(&h, "vm1", &[]).await;
    signal(&child, Signal::SIGTERM);
    let out = finish(child).await;
    assert_eq!(out.status.code(), None);
    assert!(!h.is_running("vm1"));
}

#[tokio::test]
async fn the_guest_shuts_down_with_exit_0_or_crashes_with_its_code_after_t() {
    let h = home_with(&["ok", "crash"]);
    h.set_knobs(
        &Knobs::new()
            .with_latency_scale(1.0)
            .with_vm("ok", VmKnob::default().exits_after(200, 0))
            .with_vm("crash", VmKnob::default().exits_after(200, 1)),
    )
    .unwrap();
    let (a, b) = (start(&h, "ok", &[]).await, start(&h, "crash", &[]).await);
    let (a, b) = (finish(a).await, finish(b).await);
    assert_eq!(
        (a.status.code(), stdout(&a).as_str()),
        (Some(0), "guest has stopped the virtual machine\n")
    );
    assert_eq!(b.status.code(), Some(1));
    assert!(stdout(&b).starts_with("guest has stopped the virtual machine due to error: "));
}

#[tokio::test]
async fn ip_appears_after_the_boot_delay_and_is_stable() {
    let h = home_with(&["vm1"]);
    h.set_knobs(
        &Knobs::new()
            .with_latency_scale(1.0)
            .with_vm("vm1", VmKnob::default().with_ip_delay_ms(700)),
    )
    .unwrap();
    let child = start(&h, "vm1", &[]).await;
    let early = h.tart(FT, &["ip", "vm1"]).await.unwrap();
    assert_eq!(
        (early.code, early.stderr.as_str()),
        (Some(1), "no IP address found\n")
    );
    let out = h.tart(FT, &["ip", "vm1", "--wait", "5"]).await.unwrap();
    assert_eq!(out.code, Some(0), "{out:?}");
    let ip = out.stdout.trim().to_string();
    assert!(ip.starts_with("192.168.64."), "{ip}");
    assert_eq!(
        h.tart(FT, &["ip", "vm1", "--resolver", "agent"])
            .await
            .unwrap()
            .stdout
            .trim(),
        ip
    );
    assert_eq!(
        h.tart(FT, &["ip", "vm1"]).await.unwrap().stdout.trim(),
        ip,
        "same MAC, same IP"
    );
    signal(&child, Signal::SIGINT);
    finish(child).await;
}

#[tokio::test]
async fn ip_of_a_stopped_vm_asks_whether_it_runs_unless_the_lease_is_stale() {
    let h = home_with(&["vm1"]);
    let out = h.tart(FT, &["ip", "vm1"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(1), "no IP address found, is your VM running?\n")
    );
    let out = h
        .tart(FT, &["ip", "vm1", "--resolver", "agent"])
        .await
        .unwrap();
    assert_eq!(
        out.stderr,
        "no IP address found, is your VM running? (also make sure that Guest agent for Tart is running inside of a VM)\n"
    );
    assert_eq!(h.tart(FT, &["ip", "nope"]).await.unwrap().code, Some(2));
    h.set_knobs(&Knobs::new().with_vm("*", VmKnob::default().with_stale_lease()))
        .unwrap();
    let out = h.tart(FT, &["ip", "vm1"]).await.unwrap();
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.starts_with("192.168.64."));
}

#[tokio::test]
async fn an_ip_that_never_comes_fails_after_the_wait() {
    let h = home_with(&["vm1"]);
    h.set_knobs(&Knobs::new().with_vm("vm1", VmKnob::default().without_ip()))
        .unwrap();
    let child = start(&h, "vm1", &[]).await;
    let began = Instant::now();
    let out = h.tart(FT, &["ip", "vm1", "--wait", "1"]).await.unwrap();
    assert!(began.elapsed() >= Duration::from_secs(1));
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(1), "no IP address found\n")
    );
    signal(&child, Signal::SIGINT);
    finish(child).await;
}

#[tokio::test]
async fn exec_runs_builtins_with_the_guest_exit_code() {
    let h = home_with(&["vm1"]);
    let out = h.tart(FT, &["exec", "vm1", "true"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(2), "VM \"vm1\" is not running\n")
    );
    let child = start(&h, "vm1", &[]).await;
    let out = h
        .tart(FT, &["exec", "vm1", "echo", "hello", "--world"])
        .await
        .unwrap();
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (Some(0), "hello --world\n")
    );
    assert_eq!(
        h.tart(FT, &["exec", "vm1", "false"]).await.unwrap().code,
        Some(1)
    );
    assert_eq!(
        h.tart(FT, &["exec", "vm1", "exit", "2"])
            .await
            .unwrap()
            .code,
        Some(2)
    );
    let out = h.tart(FT, &["exec", "vm1", "frob"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(127), "frob: command not found\n")
    );
    // An in-guest shutdown ends `run` like a guest power-off.
    assert_eq!(
        h.tart(FT, &["exec", "vm1", "sudo", "shutdown", "-h", "now"])
            .await
            .unwrap()
            .code,
        Some(0)
    );
    let out = finish(child).await;
    assert_eq!(
        (out.status.code(), stdout(&out).as_str()),
        (Some(0), "guest has stopped the virtual machine\n")
    );
}

#[tokio::test]
async fn exec_fails_when_the_guest_agent_is_unreachable() {
    let h = home_with(&["vm1"]);
    h.set_knobs(
        &Knobs::new()
            .with_latency_scale(1.0)
            .with_vm("vm1", VmKnob::default().exec_unreachable_after(200)),
    )
    .unwrap();
    let child = start(&h, "vm1", &[]).await;
    let out = h.tart(FT, &["exec", "vm1", "true"]).await.unwrap();
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr
            .starts_with("Failed to connect to the VM using its control socket: "),
        "{out:?}"
    );
    assert!(
        out.stderr
            .trim_end()
            .ends_with("is the Tart Guest Agent running?")
    );
    signal(&child, Signal::SIGINT);
    finish(child).await;
}

#[tokio::test]
async fn run_resets_a_mac_that_a_running_vm_already_uses() {
    let h = home_with(&["a"]);
    h.tart(FT, &["clone", "a", "b"]).await.unwrap();
    // Force the same MAC on both (clone would have given b a fresh one).
    let cfg = std::fs::read(h.vm_dir("a").join("config.json")).unwrap();
    std::fs::write(h.vm_dir("b").join("config.json"), cfg).unwrap();
    let a = start(&h, "a", &[]).await;
    let b = start(&h, "b", &[]).await;
    assert_ne!(h.vm_mac("a"), h.vm_mac("b"));
    signal(&b, Signal::SIGINT);
    let out = finish(b).await;
    assert!(stdout(&out).starts_with("There is already a running VM with the same MAC address!\nResetting VM to assign a new MAC address...\n"));
    signal(&a, Signal::SIGINT);
    finish(a).await;
}

#[tokio::test]
async fn dropping_the_home_kills_its_running_vms() {
    let h = home_with(&["vm1"]);
    let child = start(&h, "vm1", &[]).await;
    drop(h);
    let out = finish(child).await;
    assert_eq!(out.status.code(), None, "SIGKILLed by FakeHome::drop");
}

#[tokio::test]
async fn a_run_whose_vm_directory_vanished_exits_instead_of_leaking() {
    let h = home_with(&["vm1"]);
    let child = start(&h, "vm1", &[]).await;
    std::fs::remove_dir_all(h.vm_dir("vm1")).unwrap();
    let out = finish(child).await;
    assert_eq!(out.status.code(), Some(137));
}

#[tokio::test]
async fn exec_with_i_forwards_stdin_to_the_guest() {
    use tokio::io::AsyncWriteExt;
    let h = home_with(&["vm1"]);
    let run = start(&h, "vm1", &[]).await;
    let mut child = h
        .command(FT)
        .args(["exec", "-i", "vm1", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"line one\nline two\n").await.unwrap();
    drop(stdin);
    let out = finish(child).await;
    assert_eq!(
        (out.status.code(), stdout(&out).as_str()),
        (Some(0), "line one\nline two\n")
    );
    signal(&run, Signal::SIGINT);
    finish(run).await;
}

#[tokio::test]
async fn softnet_loses_run_stdout_from_2_34_on() {
    let h = home_with(&["new", "old"]);
    let child = start(&h, "new", &["--net-softnet"]).await;
    signal(&child, Signal::SIGINT);
    let out = finish(child).await;
    assert_eq!(
        (out.status.code(), stdout(&out).as_str()),
        (Some(0), ""),
        "#1323"
    );
    h.set_knobs(&Knobs::new().with_version("2.33.1")).unwrap();
    let child = start(&h, "old", &["--net-softnet"]).await;
    signal(&child, Signal::SIGINT);
    assert_eq!(stdout(&finish(child).await), "Stopping VM...\n");
}
