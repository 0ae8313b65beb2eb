//! SPDY/3.1 as Go's spdystream speaks it, server side: [`frame`] (the frame codec, pure),
//! [`zlib`] (header blocks and their compression with SPDY's dictionary, pure), [`conn`] (one
//! connection over an upgraded socket) and [`activity`] (when a connection last moved data,
//! for its idle timeout). Nothing here knows what the streams mean: Kubernetes' remotecommand
//! and port-forward protocols live in the agent.
//!
//! The wire facts these files cite are in docs/reference/kubelet-api.md; what the agent does
//! with the streams is described in docs/kubelet-api.md.

pub mod activity;
pub mod conn;
pub mod frame;
pub mod zlib;

#[cfg(any(test, feature = "testing"))]
pub mod testing;
