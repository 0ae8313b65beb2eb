//! One exec session over an accepted SPDY connection (remotecommand,
//! docs/reference/kubelet-api.md §5.3): wait for the streams the request implies (30 s), then run
//! the session core ([`super::session`]); its end is FIN on the output streams, the status on the
//! error stream, GOAWAY, and the client hanging up.

use tracing::{debug, warn};

pub(crate) use super::session::{End, Timeouts};
#[cfg(test)]
use super::session::{IDLE, STREAM_CREATION, Starter};
use super::{
    protocol::{self, ExecOptions, Protocol, Role},
    session::{Link, Opened, Sink, Streams},
};
use spdy::{conn::Conn, zlib};

/// Serves one exec over `conn`, observing its setup and duration on `clock`.
#[cfg(test)]
pub(crate) async fn serve(
    conn: Conn,
    protocol: Protocol,
    options: ExecOptions,
    start: Starter,
    t: Timeouts,
    clock: crate::kubelet_api::stream::metrics::SessionClock,
) -> End {
    match open(conn, protocol, &options, t).await {
        Ok(opened) => super::session::exec(opened, options, start, t, clock).await,
        Err(end) => end,
    }
}

/// Waits (up to `t.creation`) for the streams `options` imply.
///
/// # Errors
/// The session's end when the client goes away first or is too slow.
pub(crate) async fn open(
    mut conn: Conn,
    protocol: Protocol,
    options: &ExecOptions,
    t: Timeouts,
) -> Result<Opened, End> {
    let want = protocol::expected(options, protocol);
    match tokio::time::timeout(t.creation, collect(&mut conn, &want)).await {
        Ok(Some(streams)) => Ok(Opened {
            streams,
            link: Link::Spdy(conn),
            status: protocol,
        }),
        Ok(None) => Err(End::ClientGone),
        Err(_) => {
            warn!("timed out waiting for client to create streams");
            Err(End::StreamsTimedOut)
        }
    }
}

fn has(s: &Streams, r: Role) -> bool {
    match r {
        Role::Error => s.error.is_some(),
        Role::Stdin => s.stdin.is_some(),
        Role::Stdout => s.stdout.is_some(),
        Role::Stderr => s.stderr.is_some(),
        Role::Resize => s.resize.is_some(),
    }
}

/// Waits for the streams in `want`; `None` when the client goes away first.
async fn collect(conn: &mut Conn, want: &[Role]) -> Option<Streams> {
    let mut s = Streams::default();
    while !want.iter().all(|r| has(&s, *r)) {
        let new = conn.accept().await?;
        let kind = zlib::get(&new.headers, "streamtype").unwrap_or_default();
        let Some(role) = Role::parse(kind).filter(|r| want.contains(r) && !has(&s, *r)) else {
            debug!(streamtype = kind, "unexpected stream ignored");
            continue;
        };
        let tx = Sink::Spdy(conn.tx(new.id));
        match role {
            Role::Error => s.error = Some(tx),
            Role::Stdin => s.stdin = Some(new.data),
            Role::Stdout => s.stdout = Some(tx),
            Role::Stderr => s.stderr = Some(tx),
            Role::Resize => s.resize = Some(new.data),
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests;
