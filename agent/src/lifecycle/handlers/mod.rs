//! The handlers probes and hooks share, one implementation each: [`exec`] (`tart exec` with a
//! deadline, [`exec::run`]), [`http`] (a GET from the Mac to the guest, [`http::HttpClient`]),
//! [`tcp`] (a connection from the Mac to the guest; probes only). Pure: [`model`] (the `httpGet`
//! target), [`url`] (its URL and headers, and a probe's status rules), [`outcome`] (a probe
//! attempt's end with kubelet's text). A probe reads a handler's end as an [`outcome::Outcome`];
//! a hook reads it in `hooks::run`.

pub(crate) mod exec;
pub(crate) mod http;
pub(crate) mod model;
pub(crate) mod outcome;
pub(crate) mod tcp;
mod tls;
pub(crate) mod url;
