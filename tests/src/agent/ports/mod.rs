//! Ports for the agents' listeners, taken below or above the kernel's ephemeral range.
//!
//! A port the kernel hands out for `bind(…:0)` comes from the ephemeral range, where outgoing
//! connections also take their local ports: between finding it free and the agent binding it,
//! a client's connection can take it (seen with a hundred agents starting at once, each
//! connecting to the API server, and one of them failing with "Address already in use").
//! Outside that range no outgoing connection takes a port, and each port is handed out once
//! per process.

use std::{
    net::SocketAddr,
    ops::Range,
    sync::{
        OnceLock,
        atomic::{AtomicU32, Ordering::Relaxed},
    },
};

/// Linux's default ephemeral range, when `/proc` does not say.
const DEFAULT_EPHEMERAL: (u16, u16) = (32768, 60999);
/// The lowest port handed out.
const LOWEST: u16 = 10_000;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// `ip_local_port_range`'s two numbers.
pub(crate) fn parse_range(text: &str) -> Option<(u16, u16)> {
    let mut it = text.split_whitespace().map(str::parse::<u16>);
    let (low, high) = (it.next()?.ok()?, it.next()?.ok()?);
    (low <= high).then_some((low, high))
}

/// The ranges outside `ephemeral` to take listening ports from, below it first.
pub(crate) fn candidates(ephemeral: (u16, u16)) -> Vec<Range<u32>> {
    let (low, high) = (u32::from(ephemeral.0), u32::from(ephemeral.1));
    [u32::from(LOWEST)..low, high + 1..65536]
        .into_iter()
        .filter(|r| !r.is_empty())
        .collect()
}

/// The kernel's ephemeral range, as `/proc` says (Linux's default when it does not).
pub(crate) fn ephemeral() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| parse_range(&t))
        .unwrap_or(DEFAULT_EPHEMERAL)
}

/// The ports outside the ephemeral range, worked out once per process.
fn outside() -> &'static [u16] {
    static PORTS: OnceLock<Vec<u16>> = OnceLock::new();
    PORTS.get_or_init(|| {
        candidates(ephemeral())
            .into_iter()
            .flatten()
            .filter_map(|p| u16::try_from(p).ok())
            .collect()
    })
}

/// A port free right now on 127.0.0.1, outside the ephemeral range and not handed out before
/// by this process (the kernel's own pick when no port outside it is free).
///
/// # Errors
/// Bind failure.
pub fn free_port() -> std::io::Result<SocketAddr> {
    let ports = outside();
    // Processes (the e2e binary, the sandbox) start at different places.
    let start = std::process::id() as usize * 7919;
    for _ in 0..ports.len() {
        let n = NEXT.fetch_add(1, Relaxed) as usize;
        let port = ports[(start + n) % ports.len()];
        if let Ok(l) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            return l.local_addr();
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()
}

#[cfg(test)]
mod tests;
