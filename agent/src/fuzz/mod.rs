//! Fuzz targets for every parser that reads network or guest bytes: SPDY frames and header
//! blocks, WebSocket channel messages, the exec, log and port-forward queries, the guest's
//! `status` share, image references, quantities, client certificates — and, from the `tart`
//! crate, Tart's own output. Each target is a plain `fn(&[u8])` that calls the real parser and
//! panics when an invariant breaks; the workspace's `fuzz` crate drives them (seed corpus,
//! mutation, per-input time and memory limits) on stable Rust (docs/testing.md, "Fuzzing").
//! This module exists only with the `fuzzing` feature or in this crate's tests; nothing in the
//! agent depends on it.

mod guest;
mod queries;
mod spdy;
mod values;
mod websocket;

pub use tart::fuzz::Target;

/// Every target, the agent's and the `tart` crate's, in a fixed order.
pub fn targets() -> Vec<Target> {
    [
        spdy::targets(),
        websocket::targets(),
        queries::targets(),
        guest::targets(),
        values::targets(),
        tart::fuzz::targets(),
    ]
    .concat()
}

#[cfg(test)]
mod tests;
