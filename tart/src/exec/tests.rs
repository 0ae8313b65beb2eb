//! Streaming exec over `/bin/sh` standing in for `tart`.

use std::{ffi::OsString, path::Path, time::Duration};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

use super::*;

const T: Duration = Duration::from_secs(10);

fn sh(script: &str, opts: ExecOpts) -> ExecSession {
    let args: Vec<OsString> = vec!["-c".into(), script.into()];
    let s = Spawn {
        program: Path::new("/bin/sh"),
        args: &args,
        env: &[],
        env_clear: false,
        inflight: None,
    };
    spawn(&s, opts).unwrap()
}

async fn read_all(r: Option<ExecReader>) -> String {
    let mut out = Vec::new();
    let mut r = r.unwrap();
    // A PTY master reports EIO once the last slave closes: that is its end of file.
    let _ = timeout(T, r.read_to_end(&mut out)).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn pipes_carry_stdin_stdout_stderr_and_the_exit_code() {
    let mut s = sh(
        "read line; echo \"out $line\"; echo err >&2; exit 3",
        ExecOpts {
            stdin: true,
            tty: None,
        },
    );
    let mut stdin = s.stdin.take().unwrap();
    stdin.write_all(b"hello\n").await.unwrap();
    drop(stdin);
    let (out, err) = (s.stdout.take(), s.stderr.take());
    let wait = s.take_wait().unwrap();
    assert_eq!(read_all(out).await, "out hello\n");
    assert_eq!(read_all(err).await, "err\n");
    assert_eq!(timeout(T, wait).await.unwrap().unwrap(), 3);
}

#[tokio::test]
async fn without_stdin_the_command_reads_dev_null() {
    let mut s = sh("cat; echo done", ExecOpts::default());
    assert!(s.stdin.is_none());
    assert_eq!(read_all(s.stdout.take()).await, "done\n");
    assert_eq!(
        timeout(T, s.take_wait().unwrap()).await.unwrap().unwrap(),
        0
    );
}

#[tokio::test]
async fn dropping_the_session_kills_the_whole_group() {
    let mut s = sh("sleep 300 & echo $!; wait", ExecOpts::default());
    let mut out = s.stdout.take().unwrap();
    let mut buf = [0u8; 32];
    let n = timeout(T, out.read(&mut buf)).await.unwrap().unwrap();
    let pid: u32 = std::str::from_utf8(&buf[..n])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(crate::signal::alive(pid));
    drop(s);
    let deadline = tokio::time::Instant::now() + T;
    while crate::signal::alive(pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "sleep {pid} survived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_killed_command_reports_128_plus_the_signal() {
    let mut s = sh("echo up; sleep 300", ExecOpts::default());
    let mut out = s.stdout.take().unwrap();
    let mut buf = [0u8; 8];
    timeout(T, out.read(&mut buf)).await.unwrap().unwrap();
    let wait = s.take_wait().unwrap();
    s.kill();
    assert_eq!(timeout(T, wait).await.unwrap().unwrap(), 128 + 9);
}

#[tokio::test]
async fn a_tty_has_the_requested_size_and_follows_resizes() {
    let mut s = sh(
        "stty size; read x; stty size",
        ExecOpts {
            stdin: true,
            tty: Some(WindowSize { cols: 80, rows: 24 }),
        },
    );
    assert!(s.stderr.is_none());
    let mut out = s.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("24 80") {
        let n = timeout(T, out.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "eof before the size: {seen:?}");
        seen.extend_from_slice(&buf[..n]);
    }
    s.resize(WindowSize {
        cols: 120,
        rows: 40,
    });
    let mut stdin = s.stdin.take().unwrap();
    stdin.write_all(b"\n").await.unwrap();
    stdin.flush().await.unwrap();
    while !String::from_utf8_lossy(&seen).contains("40 120") {
        match timeout(T, out.read(&mut buf)).await.unwrap() {
            Ok(n) if n > 0 => seen.extend_from_slice(&buf[..n]),
            other => panic!("ended before the new size ({other:?}): {seen:?}"),
        }
    }
    assert_eq!(
        timeout(T, s.take_wait().unwrap()).await.unwrap().unwrap(),
        0
    );
}
