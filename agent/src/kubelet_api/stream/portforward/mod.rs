//! Kubernetes' port-forward protocol: [`spdy`] (a pair of SPDY streams per connection) and
//! [`websocket`] (the legacy WebSocket port-forward, the query's ports as channels).

pub(crate) mod spdy;
pub(crate) mod websocket;
