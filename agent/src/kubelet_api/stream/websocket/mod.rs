//! WebSocket streaming: [`frame`] (subprotocols and channel framing; pure) and [`conn`] (one
//! WebSocket connection).

pub mod conn;
pub mod frame;
