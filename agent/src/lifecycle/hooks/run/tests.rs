use std::sync::Arc;

use tart::{ExecOutput, Op, testing::MemTart};
use tokio::{io::AsyncWriteExt, net::TcpListener};

use super::*;
use crate::lifecycle::handlers::model::{HttpGet, Scheme};

fn run_opts() -> tart::RunOpts {
    tart::RunOpts {
        dirs: vec![],
        network: tart::Network::Shared,
        root_disk: Default::default(),
        suspendable: false,
        log_path: "/dev/null".into(),
        log_cap_bytes: 1 << 20,
        start_window: Duration::ZERO,
    }
}

async fn running() -> (Arc<MemTart>, VmName) {
    let vm = VmName::new("tk-hook").unwrap();
    let tart = Arc::new(MemTart::new().with_vm(vm.as_str()));
    tart.run(&vm, &run_opts()).await.unwrap();
    (tart, vm)
}

fn argv(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test(start_paused = true)]
async fn an_exec_hook_fails_on_a_non_zero_exit_with_its_output() {
    let (tart, vm) = running().await;
    let r = HookRunner {
        tart: &*tart,
        vm: &vm,
        ip: None,
    };
    let cmd = HookAction::Exec {
        command: argv(&["sh", "-c", "exit 3"]),
    };
    let limit = Duration::from_secs(5);
    assert_eq!(run(&r, &cmd, limit).await, Ok(()));
    tart.set_exec_output(ExecOutput {
        exit_code: 3,
        stdout: "out\n".into(),
        stderr: "err\n".into(),
    });
    let got = run(&r, &cmd, limit).await.unwrap_err();
    assert_eq!(got.error, "command 'sh -c exit 3' exited with 3: err\n");
    assert_eq!(got.output, "out\nerr\n");
    tart.set_latency(Op::Exec, Duration::from_secs(60));
    let started = tokio::time::Instant::now();
    let got = run(&r, &cmd, limit).await.unwrap_err();
    assert_eq!(got.error, "command 'sh -c exit 3' timed out");
    assert_eq!(started.elapsed(), limit, "bounded by the limit");
}

#[tokio::test(start_paused = true)]
async fn a_sleep_hook_is_cut_by_the_limit_and_invalid_hooks_fail() {
    let (tart, vm) = running().await;
    let r = HookRunner {
        tart: &*tart,
        vm: &vm,
        ip: None,
    };
    let started = tokio::time::Instant::now();
    let sleep = HookAction::Sleep(Duration::from_secs(3));
    assert_eq!(run(&r, &sleep, Duration::from_secs(10)).await, Ok(()));
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    let long = HookAction::Sleep(Duration::from_secs(30));
    assert!(run(&r, &long, Duration::from_secs(10)).await.is_err());
    assert_eq!(started.elapsed(), Duration::from_secs(13));
    let bad = HookAction::Invalid("invalid handler: x".into());
    assert_eq!(
        run(&r, &bad, Duration::from_secs(1))
            .await
            .unwrap_err()
            .error,
        "invalid handler: x"
    );
}

#[tokio::test]
async fn an_http_hook_succeeds_on_any_response_and_fails_without_one() {
    let (tart, vm) = running().await;
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let mut buf = [0u8; 1024];
            let _ = tokio::io::AsyncReadExt::read(&mut s, &mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let get = |port| {
        HookAction::HttpGet(HttpGet {
            scheme: Scheme::Http,
            host: None,
            port,
            path: "/hook".into(),
            headers: vec![],
        })
    };
    let r = HookRunner {
        tart: &*tart,
        vm: &vm,
        ip: Some(Ipv4Addr::LOCALHOST),
    };
    let limit = Duration::from_secs(5);
    assert_eq!(
        run(&r, &get(port), limit).await,
        Ok(()),
        "a 500 is a response"
    );
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let got = run(&r, &get(closed_port), limit).await.unwrap_err();
    assert!(got.error.contains("connection refused"), "{got:?}");
    let no_ip = HookRunner { ip: None, ..r };
    assert!(run(&no_ip, &get(port), limit).await.is_err());
}
