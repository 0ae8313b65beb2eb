//! The streaming routes (`/exec`, `/attach`, `/portForward`): every check kubelet makes before
//! upgrading, refusals as `metav1.Status` bodies, then one hand-over ([`hand_over`]) that
//! answers 101 and runs the session on its own task over the upgraded connection, holding a
//! streaming slot ([`Slots`](super::limits::Slots)) until it ends.

use std::sync::Arc;

use bytes::Bytes;
use hyper::{
    Response,
    header::{CONTENT_TYPE, HeaderValue},
    upgrade::{OnUpgrade, Upgraded},
};
use hyper_util::rt::TokioIo;
use spdy::conn::Conn;
use tart::VmName;
use tracing::{Instrument, Span, debug, info, info_span};

use super::{
    context::{Api, Body, full},
    limits::Slot,
    logs::{LogTarget, query},
    stream::{
        ExecSource, ExecTarget,
        metrics::SessionClock,
        portforward::{spdy as portforward, websocket as ws_forward},
        remotecommand::{
            attach as attaching,
            protocol::{self, ExecOptions},
            session::{self, Starter},
        },
        status, transport, upgrade,
        websocket::frame::{self as ws_frame, WsProtocol},
    },
};

/// `/exec`: every check that kubelet makes before upgrading, then 101 and the session on its
/// own task.
pub(super) fn exec(
    api: &Api,
    target: ExecTarget,
    query: &str,
    parts: &mut hyper::http::request::Parts,
    clock: SessionClock,
) -> Response<Body> {
    let refuse = |code: u16, message: &str| refusal("exec", code, message);
    let Checked {
        source,
        options,
        vm,
    } = match admit(api, "exec", &target, protocol::exec_options(query)) {
        Ok(c) => c,
        Err(refused) => return *refused,
    };
    let transport = match transport::decide(&parts.headers) {
        Ok(t) => t,
        Err(a) => return upgrade_refused(refuse(a.status, &a.body), a.headers),
    };
    let (slot, on_upgrade) = match take_upgrade(api, parts) {
        Ok(s) => s,
        Err((code, message)) => return refuse(code, &message),
    };
    let source = source.clone();
    let argv = options.command.clone();
    let start: Starter = Box::new(move |opts| source.start(vm, argv, opts));
    let via = transport.as_str();
    let span = info_span!(
        "exec",
        namespace = %target.namespace,
        pod = %target.pod,
        container = %target.container,
        transport = via,
        protocol = transport.protocol(),
    );
    let switching_headers = transport.switching_headers();
    let timeouts = api.timeouts;
    let failed = clock.clone();
    hand_over(
        (slot, on_upgrade),
        switching_headers,
        span,
        move || failed.upgrade_failed(),
        move |io| async move {
            let end = match transport.open(io, &options, timeouts).await {
                Ok(o) => session::exec(o, options, start, timeouts, clock.clone()).await,
                Err(end) => end,
            };
            clock.ended(end.outcome());
            info!(?end, transport = via, "exec session ended");
        },
    )
}

/// The checks `/exec` and `/attach` make first, in kubelet's order: exec is served here
/// (`501`), the query is valid (`400`), the container's VM runs (`404`/`400`).
fn admit<'a>(
    api: &'a Api,
    what: &'static str,
    target: &ExecTarget,
    options: Result<ExecOptions, &'static str>,
) -> Result<Checked<'a>, Box<Response<Body>>> {
    let refuse = |code: u16, message: &str| Box::new(refusal(what, code, message));
    let Some(source) = api.exec.as_ref() else {
        let message = format!("{what} is not implemented yet by this node (tart-kubelet)");
        return Err(refuse(501, &message));
    };
    let options = options.map_err(|message| refuse(400, message))?;
    let vm = source
        .running_vm(target)
        .map_err(|e| refuse(e.status(), &e.to_string()))?;
    Ok(Checked {
        source,
        options,
        vm,
    })
}

/// What passed [`admit`]: the exec source, the request's options and the running VM.
struct Checked<'a> {
    source: &'a Arc<dyn ExecSource>,
    options: ExecOptions,
    vm: VmName,
}

/// `/attach`: the checks `/exec` makes (the container's VM must run), then stdin refused as
/// [`attaching::refusal`] says, or fed to the job through the guest's relay; the job's output
/// is followed from its current end, opened before the 101, and the session runs on its own
/// task.
pub(super) async fn attach(
    api: &Api,
    target: ExecTarget,
    query: &str,
    parts: &mut hyper::http::request::Parts,
) -> Response<Body> {
    let refuse = |code: u16, message: &str| refusal("attach", code, message);
    let Checked {
        source,
        options,
        vm,
    } = match admit(api, "attach", &target, protocol::attach_options(query)) {
        Ok(c) => c,
        Err(refused) => return *refused,
    };
    let pod = api.pods.pod(&target.namespace, &target.pod);
    if let Some(message) = pod
        .as_ref()
        .and_then(|p| attaching::refusal(p, &target.container, &options))
    {
        return refuse(400, &message);
    }
    let transport = match transport::decide(&parts.headers) {
        Ok(t) => t,
        Err(a) => return upgrade_refused(refuse(a.status, &a.body), a.headers),
    };
    let log = LogTarget {
        namespace: target.namespace.clone(),
        pod: target.pod.clone(),
        container: target.container.clone(),
    };
    let from_now = query::LogQuery {
        follow: true,
        tail_lines: Some(0),
        ..Default::default()
    };
    let (slot, on_upgrade) = match take_upgrade(api, parts) {
        Ok(s) => s,
        Err((code, message)) => return refuse(code, &message),
    };
    let output = match api.logs.open(&log, &from_now).await {
        Ok(o) => o,
        Err(e) => return refuse(e.status(), &e.to_string()),
    };
    let relay = options.stdin.then(|| {
        let source = source.clone();
        let argv = attaching::RELAY.map(str::to_owned).to_vec();
        Box::new(move |opts| source.start(vm, argv, opts)) as Starter
    });
    let via = transport.as_str();
    let span = info_span!(
        "attach",
        namespace = %target.namespace,
        pod = %target.pod,
        container = %target.container,
        transport = via,
        protocol = transport.protocol(),
    );
    let switching_headers = transport.switching_headers();
    let timeouts = api.timeouts;
    hand_over(
        (slot, on_upgrade),
        switching_headers,
        span,
        || {},
        move |io| async move {
            let end = match transport.open(io, &options, timeouts).await {
                Ok(o) => attaching::run(o, output, relay, timeouts).await,
                Err(session::End::StreamsTimedOut) => attaching::AttachEnd::StreamsTimedOut,
                Err(_) => attaching::AttachEnd::ClientGone,
            };
            info!(?end, transport = via, "attach session ended");
        },
    )
}

/// `/portForward`: the Pod must run and have an IP; then 101 and the pairs (SPDY) or the
/// query's ports (the legacy WebSocket) on their own task.
pub(super) fn port_forward(
    api: &Api,
    namespace: &str,
    pod: &str,
    uid: Option<&str>,
    query: &str,
    parts: &mut hyper::http::request::Parts,
) -> Response<Body> {
    let refuse = |code: u16, message: &str| refusal("port-forward", code, message);
    let Some(source) = api.exec.as_ref() else {
        return refuse(
            501,
            "portForward is not implemented yet by this node (tart-kubelet)",
        );
    };
    let ip = match source.guest_ip(namespace, pod, uid) {
        Ok(ip) => ip,
        Err(e) => return refuse(e.status(), &e.to_string()),
    };
    let what = format!("{pod}, uid {}", uid.unwrap_or_default());
    let forward = if upgrade::kind(&parts.headers) == upgrade::Upgrade::WebSocket {
        let (protocol, accept) =
            match transport::websocket(&parts.headers, &ws_frame::FORWARD_SERVED) {
                Ok(t) => t,
                Err(a) => return upgrade_refused(refuse(a.status, &a.body), a.headers),
            };
        let ports = match ws_forward::ports(query, protocol) {
            Ok(p) => p,
            Err(message) => return refuse(400, &message),
        };
        Forward::WebSocket {
            protocol,
            accept,
            ports,
        }
    } else {
        match upgrade::decide_forward(&parts.headers) {
            Ok(version) => Forward::Spdy(version),
            Err(a) => return upgrade_refused(refuse(a.status, &a.body), a.headers),
        }
    };
    let upgrade = match take_upgrade(api, parts) {
        Ok(s) => s,
        Err((code, message)) => return refuse(code, &message),
    };
    let (headers, via) = match &forward {
        Forward::WebSocket {
            protocol, accept, ..
        } => (
            transport::ws_switching_headers(*protocol, accept),
            "websocket",
        ),
        Forward::Spdy(version) => (transport::spdy_switching_headers(version), "spdy"),
    };
    let span = info_span!("port_forward", %namespace, %pod, transport = via);
    let idle = api.timeouts.idle;
    hand_over(
        upgrade,
        headers,
        span,
        || {},
        move |io| async move {
            match forward {
                Forward::WebSocket {
                    protocol, ports, ..
                } => ws_forward::serve(io, protocol, ports, ip, what, idle).await,
                Forward::Spdy(_) => portforward::serve(Conn::start(io, idle), ip, what).await,
            }
            info!("port-forward session ended");
        },
    )
}

/// The transport a port-forward agreed: SPDY/3.1 with this version, whose streams name
/// their ports, or the legacy WebSocket forwarding the query's `ports`.
enum Forward {
    Spdy(&'static str),
    WebSocket {
        protocol: WsProtocol,
        accept: String,
        ports: Vec<u16>,
    },
}

/// The last step before a 101: a streaming session's slot (`429` when all are taken) and
/// the connection's upgrade (`500` when it cannot be upgraded).
fn take_upgrade(
    api: &Api,
    parts: &mut hyper::http::request::Parts,
) -> Result<(Slot, OnUpgrade), (u16, String)> {
    let slot = api
        .streams
        .take("streaming sessions (exec, attach, port-forward)")
        .map_err(|message| (429, message))?;
    let on_upgrade = parts
        .extensions
        .remove::<OnUpgrade>()
        .ok_or((500, "this connection cannot be upgraded".to_owned()))?;
    Ok((slot, on_upgrade))
}

/// The 101 that hands the connection over: `session` runs on its own task in `span` over the
/// upgraded connection, holding the streaming slot until it ends; when the upgrade fails,
/// `failed` runs instead.
fn hand_over<F, S>(
    (slot, on_upgrade): (Slot, OnUpgrade),
    headers: Vec<(&'static str, String)>,
    span: Span,
    failed: impl FnOnce() + Send + 'static,
    session: S,
) -> Response<Body>
where
    S: FnOnce(TokioIo<Upgraded>) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(
        async move {
            let _slot = slot;
            match on_upgrade.await {
                Ok(upgraded) => session(TokioIo::new(upgraded)).await,
                Err(error) => {
                    failed();
                    debug!(%error, "upgrade failed");
                }
            }
        }
        .instrument(span),
    );
    switching(headers)
}

/// A request to upgrade for `what` refused with `code`: kubelet's Status JSON body.
fn refusal(what: &str, code: u16, message: &str) -> Response<Body> {
    debug!(status = code, message, "{what} refused");
    full(
        code,
        "application/json",
        status::body(&status::refusal(code, message)),
    )
}

/// `refused` with the headers the upgrade negotiation asks for (e.g. the protocols offered).
fn upgrade_refused(
    mut refused: Response<Body>,
    headers: Vec<(&'static str, String)>,
) -> Response<Body> {
    for (name, value) in headers {
        if let Ok(v) = HeaderValue::from_str(&value) {
            refused.headers_mut().append(name, v);
        }
    }
    refused
}

/// The 101 that hands the connection over, with the agreed transport's `headers`.
fn switching(headers: Vec<(&'static str, String)>) -> Response<Body> {
    let mut r = full(101, "text/plain", Bytes::new());
    let h = r.headers_mut();
    h.remove(CONTENT_TYPE);
    for (name, value) in headers {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
    r
}
