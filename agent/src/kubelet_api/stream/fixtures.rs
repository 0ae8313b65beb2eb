//! A scripted command standing in for `tart exec`, and the SPDY test client of the `spdy`
//! crate.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::FutureExt;
pub(super) use spdy::testing::{Client, T, stream_data};
use tart::{ExecControl, ExecOpts, ExecReader, ExecWriter, WindowSize};
use tokio::io::AsyncReadExt;

use super::remotecommand::session::Starter;

/// What the session did to the scripted command.
#[derive(Default)]
pub(super) struct Seen {
    pub killed: AtomicBool,
    pub sizes: Mutex<Vec<WindowSize>>,
    pub stdin: Mutex<Vec<u8>>,
}

struct Control(Arc<Seen>);

impl ExecControl for Control {
    fn kill(&self) {
        self.0.killed.store(true, Ordering::SeqCst);
    }
    fn resize(&self, size: WindowSize) {
        self.0.sizes.lock().unwrap().push(size);
    }
}

/// A command that prints `out`/`err` and exits with `code` once `exit` fires (or at once).
pub(super) fn scripted(
    out: &'static str,
    err: &'static str,
    exit: Option<tokio::sync::oneshot::Receiver<i32>>,
    code: i32,
    seen: Arc<Seen>,
) -> Starter {
    Box::new(move |opts: ExecOpts| {
        async move {
            let reader =
                |s: &'static str| Box::new(std::io::Cursor::new(s.as_bytes())) as ExecReader;
            let (stdin_w, mut stdin_r) = tokio::io::duplex(1024);
            let keep = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let _ = stdin_r.read_to_end(&mut buf).await;
                keep.stdin.lock().unwrap().extend(buf);
            });
            let wait: tart::ExecWait = match exit {
                Some(rx) => Box::pin(async move { Ok(rx.await.unwrap_or(-1)) }),
                None => Box::pin(async move { Ok(code) }),
            };
            Ok(tart::ExecSession::from_parts(
                opts.stdin.then(|| Box::new(stdin_w) as ExecWriter),
                Some(reader(out)),
                (opts.tty.is_none()).then(|| reader(err)),
                wait,
                Box::new(Control(seen)),
            ))
        }
        .boxed()
    })
}

/// Polls `f` until it holds or [`T`] passes; whether it held.
pub(super) async fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + T;
    while !f() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}
