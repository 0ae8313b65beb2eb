//! Streaming on the kubelet API: `kubectl exec` over SPDY/3.1 with the remotecommand
//! protocol, into the guest through `tart exec`, `kubectl attach` to the guest job's output,
//! and `kubectl port-forward` to the guest's IP.
//!
//! Exec and attach are served over SPDY/3.1 and over WebSocket; both transports open the
//! same session ([`session::Opened`]), so the session logic exists once. Port-forward is
//! served over SPDY and as the legacy WebSocket port-forward ([`ws_forward`]); kubectl's
//! SPDY-over-WebSocket tunnel is refused so kubectl falls back to SPDY.
//!
//! Pure parts: [`frame`] (SPDY frames), [`zlib`] (header blocks), [`protocol`] (versions,
//! query, stream roles, status, resize), [`upgrade`] (the SPDY handshake), [`ws_frame`]
//! (WebSocket subprotocols and channel framing), [`transport`]'s `decide` (which transport a
//! request gets). I/O: [`conn`] (one SPDY connection), [`ws_conn`] (one WebSocket
//! connection), [`remotecommand`] (collecting an exec's SPDY streams), [`session`] (one exec
//! session over either), [`attach`] (one attach session), [`portforward`] (one port-forward
//! session), [`guest`] (finding a Pod's running VM or IP and starting `tart exec` in it),
//! [`metrics`] (exec session counts and times).
//!
//! The wire facts these files cite are in docs/reference/kubelet-api.md (checked against the 1.20
//! API server and kubectl 1.32); what the agent does is described in docs/kubelet-api.md.

pub(crate) mod guest;
pub(crate) mod metrics;
pub(crate) mod portforward;
pub(crate) mod remotecommand;
pub(crate) mod status;
pub(crate) mod transport;
pub(crate) mod upgrade;
pub(crate) mod websocket;

#[cfg(test)]
mod fixtures;

pub(crate) use guest::{ExecSource, ExecTarget};
pub(crate) use metrics::ExecMetrics;
