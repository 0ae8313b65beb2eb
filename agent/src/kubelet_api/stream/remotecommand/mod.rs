//! Kubernetes' remotecommand protocol (exec and attach): [`protocol`] (versions, query,
//! stream roles, status, resize; pure), [`spdy`] (collecting an exec's SPDY streams),
//! [`session`] (one exec session over SPDY or WebSocket) and [`attach`] (one attach session).

pub(crate) mod attach;
pub(crate) mod protocol;
pub(crate) mod session;
pub(crate) mod spdy;
