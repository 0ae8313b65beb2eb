//! WebSocket streaming: [`frame`] (subprotocols and channel framing; pure) and [`conn`] (one
//! WebSocket connection).

pub(crate) mod conn;
pub(crate) mod frame;
