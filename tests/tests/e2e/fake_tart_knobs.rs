//! Every fake-tart failure knob (the knob-file contract in docs/fake-tart.md): rules (hang,
//! fail, delay, stall, VM limit, auxiliary storage, ENOSPC, invalid UTF-8, `times`, globs),
//! latency knobs, per-VM knobs, and that knobs are re-read while a system runs.

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tart_kubelet_tests::fake::{FakeHome, ImageKnob, Knobs, Rule, VmKnob, poll_until};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");
const IMG: &str = "ghcr.io/org/img:1";

fn home() -> FakeHome {
    FakeHome::new().expect("temp home")
}

fn small() -> Knobs {
    Knobs::new().with_image("default", ImageKnob::sized(1.0, 20))
}

fn alive(child: &Child) -> bool {
    child
        .id()
        .is_some_and(|pid| kill(Pid::from_raw(pid as i32), None).is_ok())
}

async fn start_run(h: &FakeHome, name: &str) -> Child {
    let child = h
        .command(FT)
        .args(["run", name])
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

#[tokio::test]
async fn hang_blocks_until_killed_and_times_limits_it_to_one_use() {
    let h = home();
    h.create_vm("src").unwrap();
    h.set_knobs(&Knobs::new().with_rule(Rule::hang("clone").times(1)))
        .unwrap();
    let mut hung = h
        .command(FT)
        .args(["clone", "src", "dst"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        !poll_until(Duration::from_millis(500), || !alive(&hung)).await,
        "hung clone exited"
    );
    hung.start_kill().unwrap();
    let status = tokio::time::timeout(Duration::from_secs(5), hung.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), None);
    assert!(!h.vm_exists("dst"));
    let out = h.tart(FT, &["clone", "src", "dst"]).await.unwrap();
    assert_eq!(out.code, Some(0), "the rule was used up: {out:?}");
    assert!(h.vm_exists("dst"));
}

#[tokio::test]
async fn fail_writes_the_stderr_line_and_exit_code_the_given_number_of_times() {
    let h = home();
    h.set_knobs(
        &small().with_rule(Rule::fail("pull", 1, "Error: The request timed out.").times(2)),
    )
    .unwrap();
    for _ in 0..2 {
        let out = h.tart(FT, &["pull", IMG]).await.unwrap();
        assert_eq!(
            (out.code, out.stdout.as_str(), out.stderr.as_str()),
            (Some(1), "", "Error: The request timed out.\n")
        );
    }
    assert_eq!(h.tart(FT, &["pull", IMG]).await.unwrap().code, Some(0));
}

#[tokio::test]
async fn concurrent_processes_consume_a_rule_exactly_times_times() {
    let h = home();
    h.create_vm("vm1").unwrap();
    h.set_knobs(&Knobs::new().with_rule(Rule::fail("get", 7, "boom").times(3)))
        .unwrap();
    let calls = (0..12).map(|_| h.tart(FT, &["get", "vm1", "--format", "json"]));
    let outs = futures::future::join_all(calls).await;
    let failed = outs
        .iter()
        .filter(|o| o.as_ref().unwrap().code == Some(7))
        .count();
    let ok = outs
        .iter()
        .filter(|o| o.as_ref().unwrap().code == Some(0))
        .count();
    assert_eq!((failed, ok), (3, 9));
}

#[tokio::test]
async fn rules_match_by_op_and_vm_glob() {
    let h = home();
    h.create_vm("pod-a").unwrap();
    h.create_vm("other").unwrap();
    h.set_knobs(
        &Knobs::new()
            .with_rule(Rule::fail("get", 3, "nope").for_vm("pod-*"))
            .with_rule(Rule::fail("*", 4, "any").for_vm("oth*")),
    )
    .unwrap();
    assert_eq!(h.tart(FT, &["get", "pod-a"]).await.unwrap().code, Some(3));
    assert_eq!(
        h.tart(FT, &["set", "pod-a", "--cpu", "4"])
            .await
            .unwrap()
            .code,
        Some(0)
    );
    assert_eq!(h.tart(FT, &["get", "other"]).await.unwrap().code, Some(4));
    assert_eq!(h.tart(FT, &["stop", "other"]).await.unwrap().code, Some(4));
}

#[tokio::test]
async fn delay_waits_unscaled_before_behaving_normally() {
    let h = home();
    h.set_knobs(&Knobs::new().with_rule(Rule::delay("list", 400)))
        .unwrap();
    let began = Instant::now();
    let out = h.tart(FT, &["list", "-q"]).await.unwrap();
    assert!(began.elapsed() >= Duration::from_millis(400));
    assert_eq!(out.code, Some(0));
}

#[tokio::test]
async fn stall_at_percent_stops_progress_output_forever() {
    let h = home();
    h.set_knobs(&small().with_rule(Rule::stall("pull", 40)))
        .unwrap();
    let mut child = h
        .command(FT)
        .args(["pull", IMG])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let reached = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            seen.push(line.clone());
            if line == "40%" {
                return;
            }
        }
    })
    .await;
    assert!(reached.is_ok(), "never reached 40%: {seen:?}");
    let more = tokio::time::timeout(Duration::from_millis(500), lines.next_line()).await;
    assert!(more.is_err(), "output after the stall: {more:?}");
    assert!(alive(&child));
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    // The killed pull left its resumable download behind.
    assert!(h.pull_tmp_dir(IMG).exists());
}

#[tokio::test]
async fn an_uncached_clone_stalls_too() {
    let h = home();
    h.set_knobs(&small().with_rule(Rule::stall("clone", 10)))
        .unwrap();
    let mut child = h
        .command(FT)
        .args(["clone", IMG, "vm1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(!poll_until(Duration::from_millis(500), || !alive(&child)).await);
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    assert!(!h.vm_exists("vm1"));
}

#[tokio::test]
async fn vm_limit_and_aux_storage_fail_run_with_the_spec_texts() {
    let h = home();
    h.create_vm("a").unwrap();
    h.create_vm("b").unwrap();
    let a = start_run(&h, "a").await;
    h.set_knobs(
        &Knobs::new()
            .with_rule(Rule::vm_limit().times(1))
            .with_rule(Rule::aux_storage_locked().times(1)),
    )
    .unwrap();
    let out = h.tart(FT, &["run", "b"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            Some(1),
            "The number of VMs exceeds the system limit (other running VMs: a)\n"
        )
    );
    let out = h.tart(FT, &["run", "b"]).await.unwrap();
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr,
        "Error Domain=VZErrorDomain Code=2 \"Failed to lock auxiliary storage.\" UserInfo={NSLocalizedFailure=Failed to lock auxiliary storage.}\n"
    );
    assert!(!h.is_running("b"), "the lock dies with the process");
    kill(Pid::from_raw(a.id().unwrap() as i32), Signal::SIGINT).unwrap();
    a.wait_with_output().await.unwrap();
}

#[tokio::test]
async fn max_running_vms_emulates_the_two_vm_limit() {
    let h = home();
    for n in ["a", "b", "c"] {
        h.create_vm(n).unwrap();
    }
    h.set_knobs(&Knobs::new().with_max_running_vms(2)).unwrap();
    let a = start_run(&h, "a").await;
    let b = start_run(&h, "b").await;
    let out = h.tart(FT, &["run", "c"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            Some(1),
            "The number of VMs exceeds the system limit (other running VMs: a, b)\n"
        )
    );
    for c in [a, b] {
        kill(Pid::from_raw(c.id().unwrap() as i32), Signal::SIGINT).unwrap();
        c.wait_with_output().await.unwrap();
    }
}

#[tokio::test]
async fn no_space_fails_pull_and_clone_with_enospc() {
    let h = home();
    h.create_vm("src").unwrap();
    h.set_knobs(
        &small()
            .with_rule(Rule::no_space("pull"))
            .with_rule(Rule::no_space("clone")),
    )
    .unwrap();
    for args in [&["pull", IMG][..], &["clone", "src", "dst"][..]] {
        let out = h.tart(FT, args).await.unwrap();
        assert_eq!(out.code, Some(1), "{args:?}");
        assert_eq!(
            out.stderr,
            "Error: The operation couldn’t be completed. No space left on device\n"
        );
    }
    assert!(!h.vm_exists("dst"));
    assert!(!h.pull_tmp_dir(IMG).exists());
}

#[tokio::test]
async fn invalid_utf8_reaches_both_streams_and_the_command_still_works() {
    let h = home();
    h.create_vm("vm1").unwrap();
    h.set_knobs(&Knobs::new().with_rule(Rule::invalid_utf8("list")))
        .unwrap();
    let out = h.command(FT).args(["list", "-q"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(std::str::from_utf8(&out.stdout).is_err() && std::str::from_utf8(&out.stderr).is_err());
    assert!(out.stdout.ends_with(b"vm1\n"));
}

#[tokio::test]
async fn missing_and_authenticated_images_answer_like_a_registry() {
    let h = home();
    h.set_knobs(
        &small()
            .with_image("ghcr.io/org/gone:1", ImageKnob::missing())
            .with_image(IMG, ImageKnob::sized(1.0, 20).with_auth("u", "p")),
    )
    .unwrap();
    let out = h.tart(FT, &["pull", "ghcr.io/org/gone:1"]).await.unwrap();
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.starts_with(
            "Error: UnexpectedHTTPStatusCode(when: \"pulling manifest\", code: 404, details: \""
        ),
        "{out:?}"
    );
    let auth_failed = "Error: AuthFailed(why: \"received unexpected HTTP status code 401 while retrieving an authentication token\", details: \"\")\n";
    let out = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!((out.code, out.stderr.as_str()), (Some(1), auth_failed));
    let with = |host: &str| {
        let mut c = h.command(FT);
        c.args(["pull", IMG])
            .env("TART_REGISTRY_USERNAME", "u")
            .env("TART_REGISTRY_PASSWORD", "p")
            .env("TART_REGISTRY_HOSTNAME", host);
        c
    };
    let out = with("quay.io").output().await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        auth_failed,
        "credentials restricted to another host"
    );
    let out = with("ghcr.io").output().await.unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test]
async fn latency_scale_and_pull_speed_set_the_pull_duration() {
    let h = home();
    // 1 GB at 1000 MB/s = 1 simulated second; at scale 0.4 that is 0.4 s real.
    h.set_knobs(&small().with_pull_mb_per_s(1000.0).with_latency_scale(0.4))
        .unwrap();
    let began = Instant::now();
    let out = h.tart(FT, &["pull", IMG]).await.unwrap();
    let took = began.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let pcts: Vec<&str> = out
        .lines()
        .into_iter()
        .filter(|l| l.ends_with('%'))
        .collect();
    assert_eq!(pcts, ["0%", "100%"], "one line per simulated second");
}

#[tokio::test]
async fn clone_ms_and_boot_ms_are_scaled_delays() {
    let h = home();
    h.create_vm("src").unwrap();
    h.set_knobs(
        &Knobs::new()
            .with_latency_scale(1.0)
            .with_clone_ms(400)
            .with_boot_ms(600),
    )
    .unwrap();
    let began = Instant::now();
    assert_eq!(
        h.tart(FT, &["clone", "src", "vm1"]).await.unwrap().code,
        Some(0)
    );
    assert!(began.elapsed() >= Duration::from_millis(400));
    let run = start_run(&h, "vm1").await;
    let early = h.tart(FT, &["ip", "vm1"]).await.unwrap();
    assert_eq!(early.code, Some(1), "no IP before boot_ms");
    let out = h.tart(FT, &["ip", "vm1", "--wait", "5"]).await.unwrap();
    assert_eq!(out.code, Some(0));
    kill(Pid::from_raw(run.id().unwrap() as i32), Signal::SIGINT).unwrap();
    run.wait_with_output().await.unwrap();
}

#[tokio::test]
async fn a_running_vm_picks_up_knob_changes() {
    let h = home();
    h.create_vm("vm1").unwrap();
    let run = start_run(&h, "vm1").await;
    assert!(!poll_until(Duration::from_millis(300), || !h.is_running("vm1")).await);
    h.set_knobs(&Knobs::new().with_vm("vm1", VmKnob::default().exits_after(0, 0)))
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(5), run.wait_with_output())
        .await
        .expect("run ignored the new knob")
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "guest has stopped the virtual machine\n"
    );
}

#[tokio::test]
async fn a_malformed_knob_file_fails_loudly() {
    let h = home();
    std::fs::create_dir_all(h.knobs_path().parent().unwrap()).unwrap();
    std::fs::write(
        h.knobs_path(),
        br#"{"rules": [{"op": "get", "action": {"explode": true}}]}"#,
    )
    .unwrap();
    let out = h.tart(FT, &["list"]).await.unwrap();
    assert_eq!(out.code, Some(70));
    assert!(out.stderr.starts_with("fake-tart: invalid "), "{out:?}");
}

#[tokio::test]
async fn timeout_at_percent_prints_the_retry_lines_and_keeps_the_partial_download() {
    let h = home();
    h.set_knobs(&small().with_rule(Rule::timeout_at("pull", 30).times(1)))
        .unwrap();
    let out = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(1), "Error: The request timed out.\n")
    );
    let retries = out
        .lines()
        .into_iter()
        .filter(|l| {
            *l == "Error pulling disk layer 0: \"The request timed out.\", attempting to re-try..."
        })
        .count();
    assert_eq!(retries, 5, "{}", out.stdout);
    assert!(out.lines().contains(&"30%") && !out.lines().contains(&"40%"));
    assert!(
        h.pull_tmp_dir(IMG).exists(),
        "partial download kept for a resume"
    );
    let again = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!(again.code, Some(0));
    assert!(!again.lines().contains(&"0%"), "resumed: {}", again.stdout);
}

#[tokio::test]
async fn a_hung_process_exits_once_its_home_is_deleted() {
    let h = home();
    h.set_knobs(&Knobs::new().with_rule(Rule::hang("version")))
        .unwrap();
    let mut hung = h.command(FT).arg("--version").spawn().unwrap();
    assert!(!poll_until(Duration::from_millis(400), || !alive(&hung)).await);
    std::fs::remove_dir_all(h.path()).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(5), hung.wait())
        .await
        .expect("still hanging")
        .unwrap();
    assert_eq!(status.code(), Some(137));
}
