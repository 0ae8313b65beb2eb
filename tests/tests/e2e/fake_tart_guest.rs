//! fake-tart as a guest the host can probe: per-VM loopback addresses (`loopback_ips`), the
//! guest's HTTP/TCP endpoints and how they follow the knobs, and `exec` running real
//! processes (`real_exec`) with the guest agent's exit codes, stdin, kills and speed knobs.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tart_kubelet_tests::agent::free_port;
use tart_kubelet_tests::cluster::processes_mentioning;
use tart_kubelet_tests::fake::{
    EndpointState, FakeHome, Knobs, VmKnob, poll_until, processes_of_home,
};
use tart_kubelet_tests::proc_stat;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::Child;

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");
/// Within how long a knob change must show on an endpoint. The run re-reads its knobs every
/// 50 ms; the margin is for a loaded machine.
const FLIP: Duration = Duration::from_secs(2);

fn home_with(names: &[&str], knobs: &Knobs) -> FakeHome {
    let h = FakeHome::new().expect("temp home");
    for n in names {
        h.create_vm(n).unwrap();
    }
    h.set_knobs(knobs).unwrap();
    h
}

/// Starts `tart run <name>` and waits until it holds the VM.
async fn start(h: &FakeHome, name: &str) -> Child {
    let child = h
        .command(FT)
        .args(["run", name])
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

async fn finish(child: Child) -> Output {
    tokio::time::timeout(Duration::from_secs(15), child.wait_with_output())
        .await
        .expect("process did not exit")
        .unwrap()
}

/// [`finish`] for a signalled `exec`: if it has not ended (or its output is still held open)
/// after 15 s, fails with its state and every process of the home with its state and command
/// line, read while the `exec` is still held (dropping it kills it).
async fn finish_exec(h: &FakeHome, exec: Child) -> Output {
    let exec_pid = pid(&exec).as_raw().unsigned_abs();
    let wait = exec.wait_with_output();
    tokio::pin!(wait);
    if let Ok(out) = tokio::time::timeout(Duration::from_secs(15), &mut wait).await {
        return out.unwrap();
    }
    let state = |p: u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .ok()
            .and_then(|s| proc_stat::field(&s, 3).map(str::to_owned))
            .unwrap_or_else(|| "gone".into())
    };
    let left: Vec<String> = processes_mentioning(h.path())
        .into_iter()
        .map(|(p, cmd)| format!("{p} {} {cmd}", state(p)))
        .collect();
    panic!(
        "exec {exec_pid} did not end within 15 s (state {}); processes of the home: {left:?}",
        state(exec_pid)
    )
}

fn pid(child: &Child) -> Pid {
    Pid::from_raw(child.id().unwrap() as i32)
}

async fn stop(run: Child) {
    kill(pid(&run), Signal::SIGINT).unwrap();
    finish(run).await;
}

async fn ip(h: &FakeHome, name: &str) -> Ipv4Addr {
    let out = h.tart(FT, &["ip", name, "--wait", "10"]).await.unwrap();
    assert_eq!(out.code, Some(0), "{out:?}");
    out.stdout.trim().parse().unwrap()
}

/// `n` distinct ports free on 127.0.0.1 right now (the VMs' own addresses are unused).
fn ports<const N: usize>() -> [u16; N] {
    let mut out = [0; N];
    for i in 0..N {
        out[i] = loop {
            let p = free_port().unwrap().port();
            if !out[..i].contains(&p) {
                break p;
            }
        };
    }
    out
}

/// What one GET got.
#[derive(Debug, PartialEq)]
enum Got {
    Status(u16, String),
    Refused,
    /// Connected, sent the request, no answer within the deadline.
    Silence,
}

async fn get(addr: SocketAddr) -> Got {
    let mut s = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Got::Refused,
        Err(e) => panic!("connect {addr}: {e}"),
    };
    let req =
        format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: kube-probe/1.20\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    match tokio::time::timeout(Duration::from_millis(300), s.read_to_end(&mut raw)).await {
        Err(_) => Got::Silence,
        Ok(r) => {
            r.unwrap();
            let raw = String::from_utf8(raw).unwrap();
            let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
            let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
            Got::Status(status, body.to_owned())
        }
    }
}

/// A TCP check: connect, then close without a request.
async fn accepts(addr: SocketAddr) -> bool {
    TcpStream::connect(addr).await.is_ok()
}

/// Polls the async `cond` every 10 ms until it holds or `within` passes.
async fn eventually<F: Future<Output = bool>>(
    within: Duration,
    mut cond: impl FnMut() -> F,
) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// === loopback addresses ===

#[tokio::test]
async fn loopback_ips_give_each_vm_a_stable_address_in_127_64() {
    let h = home_with(&["lo-a", "lo-b"], &Knobs::new());
    let (a, b) = (start(&h, "lo-a").await, start(&h, "lo-b").await);
    let lease = ip(&h, "lo-a").await;
    assert_eq!(lease.octets()[..3], [192, 168, 64], "default unchanged");
    h.set_knobs(&Knobs::new().with_loopback_ips()).unwrap();
    let (ip_a, ip_b) = (ip(&h, "lo-a").await, ip(&h, "lo-b").await);
    for addr in [ip_a, ip_b] {
        assert!(addr.is_loopback() && addr.octets()[1] == 64, "{addr}");
    }
    assert_ne!(ip_a, ip_b);
    stop(a).await;
    let again = start(&h, "lo-a").await;
    assert_eq!(ip(&h, "lo-a").await, ip_a, "stable across runs");
    // Another home's VM with the same name and MAC (a parallel test) gets another address.
    let other = home_with(&["lo-a"], &Knobs::new().with_loopback_ips());
    assert_eq!(other.vm_mac("lo-a"), h.vm_mac("lo-a"));
    let twin = start(&other, "lo-a").await;
    assert_ne!(ip(&other, "lo-a").await, ip_a);
    stop(twin).await;
    stop(again).await;
    stop(b).await;
}

// === endpoints ===

#[tokio::test]
async fn each_endpoint_state_answers_over_http_and_tcp_and_a_flip_is_picked_up() {
    let [healthy, failing, hanging, closed] = ports::<4>();
    let vm = |states: [EndpointState; 4]| {
        let mut k = VmKnob::default();
        for (port, state) in [healthy, failing, hanging, closed].into_iter().zip(states) {
            k = k.with_endpoint(port, state);
        }
        Knobs::new().with_loopback_ips().with_vm("ep-flip", k)
    };
    use EndpointState::{Closed, Failing, Hanging, Healthy};
    let h = home_with(&["ep-flip"], &vm([Healthy, Failing, Hanging, Closed]));
    let run = start(&h, "ep-flip").await;
    let ip = ip(&h, "ep-flip").await;
    let at = |port: u16| SocketAddr::from((ip, port));
    assert!(eventually(FLIP, || async { accepts(at(healthy)).await }).await);
    assert_eq!(
        get(at(healthy)).await,
        Got::Status(200, "healthy ep-flip\n".into())
    );
    assert_eq!(
        get(at(failing)).await,
        Got::Status(500, "failing ep-flip\n".into())
    );
    assert_eq!(get(at(hanging)).await, Got::Silence);
    assert_eq!(get(at(closed)).await, Got::Refused);
    for port in [healthy, failing, hanging] {
        assert!(accepts(at(port)).await, "TCP accept on {port}");
    }
    assert!(!accepts(at(closed)).await);

    h.set_knobs(&vm([Failing, Healthy, Closed, Healthy]))
        .unwrap();
    assert!(
        eventually(FLIP, || async {
            get(at(healthy)).await == Got::Status(500, "failing ep-flip\n".into())
                && get(at(failing)).await == Got::Status(200, "healthy ep-flip\n".into())
                && get(at(hanging)).await == Got::Refused
                && get(at(closed)).await == Got::Status(200, "healthy ep-flip\n".into())
        })
        .await,
        "the flip was not picked up"
    );
    stop(run).await;
}

#[tokio::test]
async fn endpoints_are_served_only_once_booted_and_while_the_vm_runs() {
    let [port] = ports::<1>();
    let knobs = Knobs::new()
        .with_loopback_ips()
        .with_latency_scale(0.001)
        .with_vm(
            "ep-life",
            VmKnob::default()
                .with_ip_delay_ms(1_500_000)
                .with_endpoint(port, EndpointState::Healthy),
        );
    let h = home_with(&["ep-life"], &knobs);
    let run = start(&h, "ep-life").await;
    // Before the boot delay (1.5 s) ends, `ip --wait 0` has no address and nothing listens.
    let early = h.tart(FT, &["ip", "ep-life"]).await.unwrap();
    let addr = SocketAddr::from((ip(&h, "ep-life").await, port));
    assert_eq!(early.code, Some(1), "{early:?}");
    assert!(eventually(FLIP, || async { accepts(addr).await }).await);
    stop(run).await;
    assert_eq!(get(addr).await, Got::Refused, "stopped with SIGINT");

    let run = start(&h, "ep-life").await;
    assert_eq!(get(addr).await, Got::Refused, "not booted yet");
    assert!(eventually(Duration::from_secs(10), || async { accepts(addr).await }).await);
    kill(pid(&run), Signal::SIGKILL).unwrap();
    finish(run).await;
    assert_eq!(get(addr).await, Got::Refused, "killed");
}

// === exec ===

fn real_exec(name: &str) -> Knobs {
    Knobs::new().with_vm(name, VmKnob::default().with_real_exec())
}

#[tokio::test]
async fn exec_runs_a_real_command_without_a_shell_in_the_guest_root() {
    let h = home_with(&["ex-real"], &real_exec("ex-real"));
    let run = start(&h, "ex-real").await;
    let out = h
        .tart(
            FT,
            &["exec", "ex-real", "sh", "-c", "pwd; echo oops >&2; exit 3"],
        )
        .await
        .unwrap();
    let root = h.vm_dir("ex-real").join("guest");
    assert_eq!(
        (out.code, out.stdout.trim(), out.stderr.as_str()),
        (Some(3), root.to_str().unwrap(), "oops\n")
    );
    let out = h
        .tart(FT, &["exec", "ex-real", "echo", "$HOME", "*", ";"])
        .await
        .unwrap();
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), "$HOME * ;\n"));
    let out = h
        .tart(FT, &["exec", "ex-real", "no-such-program-x"])
        .await
        .unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            Some(1),
            "Error: unknown (2): exec: \"no-such-program-x\": executable file not found in $PATH\n"
        )
    );
    stop(run).await;
}

#[tokio::test]
async fn exec_passes_stdin_through_with_i_and_closes_it_otherwise() {
    let h = home_with(&["ex-in"], &real_exec("ex-in"));
    let run = start(&h, "ex-in").await;
    for (flag, want) in [(Some("-i"), "HELLO\n"), (None, "")] {
        let mut cmd = h.command(FT);
        cmd.arg("exec");
        cmd.args(flag);
        let mut child = cmd
            .args(["ex-in", "tr", "a-z", "A-Z"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"hello\n").await.unwrap();
        // Without -i the pipe stays open and the command must see EOF anyway.
        let held = flag.is_none().then_some(stdin);
        let out = finish(child).await;
        drop(held);
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).as_ref()
            ),
            (Some(0), want),
            "{flag:?}"
        );
    }
    stop(run).await;
}

/// The PIDs of the home other than the `run` process: `exec`s and their commands.
fn exec_processes(h: &FakeHome, run: &Child) -> Vec<i32> {
    let run = pid(run).as_raw();
    let mut pids = processes_of_home(h.path());
    pids.retain(|p| *p != run);
    pids
}

/// Starts `tart exec <name> sleep 1000` in a process group of its own and waits until the
/// command runs (two processes of the home besides `run`).
async fn hung_exec(h: &FakeHome, name: &str, run: &Child) -> Child {
    let mut cmd = h.command(FT);
    cmd.args(["exec", name, "sleep", "1000"])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    default_signals(&mut cmd);
    let child = cmd.spawn().unwrap();
    assert!(
        poll_until(Duration::from_secs(10), || exec_processes(h, run).len()
            == 2)
        .await,
        "exec never started its command: {:?}",
        exec_processes(h, run)
    );
    child
}

/// The exec starts with SIGINT and SIGTERM at their default action, whatever the test run
/// inherited: a run started in the background by a shell without job control has SIGINT
/// ignored, and a child would keep ignoring it.
#[allow(unsafe_code)]
fn default_signals(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and only calls sigaction(2)
    // (through `signal`), which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            for s in [Signal::SIGINT, Signal::SIGTERM] {
                nix::sys::signal::signal(s, nix::sys::signal::SigHandler::SigDfl)
                    .map_err(std::io::Error::from)?;
            }
            Ok(())
        });
    }
}

#[tokio::test]
async fn a_hung_exec_killed_by_a_group_sigkill_leaves_no_process() {
    let h = home_with(&["ex-kill"], &real_exec("ex-kill"));
    let run = start(&h, "ex-kill").await;
    let exec = hung_exec(&h, "ex-kill", &run).await;
    killpg(pid(&exec), Signal::SIGKILL).unwrap();
    assert_eq!(finish_exec(&h, exec).await.status.code(), None);
    assert!(
        poll_until(Duration::from_secs(5), || exec_processes(&h, &run)
            .is_empty())
        .await,
        "left behind: {:?}",
        exec_processes(&h, &run)
    );
    stop(run).await;
}

#[tokio::test]
async fn sigterm_or_sigint_to_exec_alone_kills_its_command() {
    let h = home_with(&["ex-term"], &real_exec("ex-term"));
    let run = start(&h, "ex-term").await;
    for sig in [Signal::SIGTERM, Signal::SIGINT] {
        let exec = hung_exec(&h, "ex-term", &run).await;
        kill(pid(&exec), sig).unwrap();
        assert_eq!(finish_exec(&h, exec).await.status.code(), None, "{sig}");
        assert!(
            poll_until(Duration::from_secs(5), || exec_processes(&h, &run)
                .is_empty())
            .await,
            "{sig} left behind: {:?}",
            exec_processes(&h, &run)
        );
    }
    stop(run).await;
}

#[tokio::test]
async fn a_vm_stopping_under_exec_ends_its_command_and_fails_the_call() {
    let h = home_with(&["ex-gone"], &real_exec("ex-gone"));
    let run = start(&h, "ex-gone").await;
    let exec = hung_exec(&h, "ex-gone", &run).await;
    let run_pid = pid(&run).as_raw();
    stop(run).await;
    let out = finish(exec).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: unavailable (14): Transport became inactive\n"
    );
    let left: Vec<i32> = processes_of_home(h.path())
        .into_iter()
        .filter(|p| *p != run_pid)
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[tokio::test]
async fn a_slow_agent_answers_after_exec_delay_ms_and_an_unreachable_one_runs_nothing() {
    let knobs = Knobs::new()
        .with_latency_scale(0.001)
        .with_vm(
            "ex-slow",
            VmKnob::default()
                .with_real_exec()
                .with_exec_delay_ms(400_000),
        )
        .with_vm(
            "ex-deaf",
            VmKnob::default()
                .with_real_exec()
                .exec_unreachable_after(200_000),
        );
    let h = home_with(&["ex-slow", "ex-deaf"], &knobs);
    let (slow, deaf) = (start(&h, "ex-slow").await, start(&h, "ex-deaf").await);
    let began = Instant::now();
    let out = h
        .tart(FT, &["exec", "ex-slow", "echo", "late"])
        .await
        .unwrap();
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), "late\n"));
    assert!(
        began.elapsed() >= Duration::from_millis(400),
        "{:?}",
        began.elapsed()
    );

    let began = Instant::now();
    let out = h
        .tart(FT, &["exec", "ex-deaf", "touch", "ran"])
        .await
        .unwrap();
    assert!(
        began.elapsed() >= Duration::from_millis(200),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.ends_with("is the Tart Guest Agent running?\n"),
        "{out:?}"
    );
    assert!(!h.vm_dir("ex-deaf").join("guest/ran").exists());
    stop(slow).await;
    stop(deaf).await;
}

#[tokio::test]
async fn a_guest_launcher_vm_execs_real_processes_in_the_launchers_root() {
    let knobs = Knobs::new().with_vm("ex-guest", VmKnob::default().running_guest_launcher());
    let h = home_with(&["ex-guest"], &knobs);
    let shares = tempfile::tempdir().unwrap();
    let (control, status) = (shares.path().join("control"), shares.path().join("status"));
    std::fs::create_dir_all(&status).unwrap();
    std::fs::create_dir_all(&control).unwrap();
    std::fs::write(control.join("version"), b"1").unwrap();
    let dirs = [
        format!("control:{}:ro", control.display()),
        format!("status:{}", status.display()),
    ];
    let run = h
        .command(FT)
        .args(["run", "ex-guest", "--dir", &dirs[0], "--dir", &dirs[1]])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nothing to run: the launcher leaves `idle` and the VM keeps running.
    let idle = || std::fs::read_to_string(status.join("state")).is_ok_and(|s| s.trim() == "idle");
    assert!(poll_until(Duration::from_secs(10), idle).await);
    let out = h
        .tart(
            FT,
            &[
                "exec",
                "ex-guest",
                "sh",
                "-c",
                "test -L 'Volumes/My Shared Files/status' && pwd",
            ],
        )
        .await
        .unwrap();
    let root = h.vm_dir("ex-guest").join("guest");
    assert_eq!(
        (out.code, out.stdout.trim()),
        (Some(0), root.to_str().unwrap()),
        "{out:?}"
    );
    stop(run).await;
}
