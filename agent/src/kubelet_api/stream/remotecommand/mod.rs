//! Kubernetes' remotecommand protocol (exec and attach): [`protocol`] (versions, query,
//! stream roles, status, resize; pure), [`spdy`] (collecting an exec's SPDY streams),
//! [`session`] (one exec session over SPDY or WebSocket) and [`attach`] (one attach session).

pub mod attach;
pub mod protocol;
pub mod session;
pub mod spdy;
