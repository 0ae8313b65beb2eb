//! The `httpGet` handler, for probes and hooks alike: a GET from the Mac to the guest over
//! HTTP/1.1 (HTTPS without certificate checks), one connection per request, redirects to the
//! same host followed, at most [`MAX_BODY`] bytes of body read, the whole attempt bounded by a
//! deadline ([`HttpClient::get`]). The URL, headers and a probe's status rules are
//! [`url`](super::url)'s; failures read as Go's client words them. A probe reads the end with
//! [`HttpEnd::probe_outcome`]; a hook reads it in `hooks::run`.

use std::{net::Ipv4Addr, time::Duration};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::{
    Request,
    body::Incoming,
    client::conn::http1,
    header::{HeaderName, HeaderValue, LOCATION},
};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;

use super::{
    model::{HttpGet, Scheme},
    outcome::Outcome,
    tcp::{dial, os_text},
    tls::insecure_connector,
    url::{MAX_REDIRECTS, Url, host_header, is_followed_redirect, request_headers, status_outcome},
};

/// Most body bytes read, as kubelet reads (10 KiB); the rest is left unread.
pub(crate) const MAX_BODY: usize = 10 << 10;

/// The `httpGet` client of probes (`GuestChecker`) and hooks.
pub(crate) struct HttpClient {
    tls: TlsConnector,
}

impl Default for HttpClient {
    fn default() -> Self {
        Self::new()
    }
}

/// How one GET ended, before a probe's or a hook's rules read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HttpEnd {
    /// The final response arrived: its status and the start of its body, or why the body could
    /// not be read (Go's words).
    Response {
        /// The status code.
        status: u16,
        /// At most [`MAX_BODY`] bytes of body, or the body read's error.
        body: Result<String, String>,
    },
    /// No final response: Go's client's words (`Get "<url>": …`).
    Failed(String),
}

impl HttpEnd {
    /// What the end means for a probe: kubelet's status rules on a response
    /// ([`status_outcome`]), a failure without one.
    pub(crate) fn probe_outcome(self) -> Outcome {
        match self {
            Self::Response {
                status,
                body: Ok(body),
            } => status_outcome(status, &body),
            // kubelet: a body read error is a prober error, and its result is thrown away.
            Self::Response { body: Err(why), .. } => Outcome::Error(why),
            Self::Failed(why) => Outcome::Failure(why),
        }
    }
}

/// How far the attempt got, read when the timeout cuts it short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Connecting, sending, or waiting for the response head (of any hop).
    Headers,
    /// Reading the body of the final response, whose status is this.
    Body(u16),
}

/// The request under way.
struct Progress {
    url: Url,
    phase: Phase,
}

/// One response: its status, where it redirects to, and the start of its body.
struct Exchange {
    status: u16,
    location: Option<String>,
    body: Result<String, String>,
}

impl HttpClient {
    /// A client; its TLS configuration is built once.
    pub(crate) fn new() -> Self {
        Self {
            tls: insecure_connector(),
        }
    }

    /// One probe attempt: [`get`](Self::get), read by [`HttpEnd::probe_outcome`].
    pub(crate) async fn check(
        &self,
        get: &HttpGet,
        pod_ip: Ipv4Addr,
        timeout: Duration,
    ) -> Outcome {
        self.get(get, pod_ip, timeout).await.probe_outcome()
    }

    /// One GET of `get` against `pod_ip` (or its own host), bounded by `timeout`.
    ///
    /// # Cancellation
    /// Every socket lives in the returned future; dropping it closes them.
    pub(crate) async fn get(&self, get: &HttpGet, pod_ip: Ipv4Addr, timeout: Duration) -> HttpEnd {
        let host = get.host.clone().unwrap_or_else(|| pod_ip.to_string());
        let mut progress = Progress {
            url: Url::new(get.scheme, &host, get.port, &get.path),
            phase: Phase::Headers,
        };
        let result = tokio::time::timeout(timeout, self.attempt(get, &mut progress)).await;
        match result {
            Ok(end) => end,
            Err(_) => match progress.phase {
                Phase::Headers => HttpEnd::Failed(format!(
                    "Get {:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                    progress.url.to_string()
                )),
                Phase::Body(status) => HttpEnd::Response {
                    status,
                    body: Err(
                        "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
                            .into(),
                    ),
                },
            },
        }
    }

    async fn attempt(&self, get: &HttpGet, progress: &mut Progress) -> HttpEnd {
        let first_host = progress.url.host.clone();
        let mut host = host_header(&progress.url, &get.headers);
        let mut redirects = 0;
        loop {
            let url = progress.url.clone();
            let fail = |why: String| HttpEnd::Failed(format!("Get {:?}: {why}", url.to_string()));
            let headers = request_headers(&host, &get.headers);
            let exchange = match self.exchange(&url, &headers, &first_host, progress).await {
                Ok(x) => x,
                Err(why) => return fail(why),
            };
            let next = exchange
                .location
                .as_deref()
                .filter(|_| is_followed_redirect(exchange.status))
                .and_then(|loc| url.join(loc).map(|u| (u, !loc.contains("//"))));
            match next {
                // Go's client, as kubelet sets it up, follows redirects to the same host name
                // only; the others end here with the 3xx, a success with a warning.
                Some((next, relative)) if next.host == first_host => {
                    if redirects == MAX_REDIRECTS {
                        return fail(format!("stopped after {MAX_REDIRECTS} redirects"));
                    }
                    redirects += 1;
                    // A custom Host survives a relative redirect only (Go's rule).
                    if !relative || host == url.authority() {
                        host = next.authority();
                    }
                    progress.url = next;
                }
                _ => {
                    return HttpEnd::Response {
                        status: exchange.status,
                        body: exchange.body,
                    };
                }
            }
        }
    }

    /// One request on its own connection. `Err` is the text after `Get "<url>": `.
    async fn exchange(
        &self,
        url: &Url,
        headers: &[(String, String)],
        first_host: &str,
        progress: &mut Progress,
    ) -> Result<Exchange, String> {
        progress.phase = Phase::Headers;
        let tcp = dial(&url.host, url.port).await.map_err(|e| e.to_string())?;
        let mut req = Request::get(url.target())
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        for (name, value) in headers {
            // Names and values were checked when the spec was read; the Host is ours.
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                req.headers_mut().append(n, v);
            }
        }
        // The final response is the one not redirected onwards to the same host.
        let is_final = |status: u16, location: Option<&str>| {
            !is_followed_redirect(status)
                || location
                    .and_then(|l| url.join(l))
                    .is_none_or(|u| u.host != first_host)
        };
        match url.scheme {
            Scheme::Http => send(tcp, req, is_final, &mut progress.phase).await,
            Scheme::Https => {
                let name = ServerName::try_from(url.host.clone()).map_err(|e| e.to_string())?;
                let tls = self
                    .tls
                    .connect(name, tcp)
                    .await
                    .map_err(|e| format!("tls: {}", os_text(&e)))?;
                send(tls, req, is_final, &mut progress.phase).await
            }
        }
    }
}

/// Send `req` on `io` and read the response; the body only of a final response. The
/// connection is driven in this future, so nothing outlives it.
async fn send<S>(
    io: S,
    req: Request<Empty<Bytes>>,
    is_final: impl Fn(u16, Option<&str>) -> bool,
    phase: &mut Phase,
) -> Result<Exchange, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = http1::Builder::new()
        .title_case_headers(true)
        .handshake::<_, Empty<Bytes>>(TokioIo::new(io))
        .await
        .map_err(|e| go_text(&e))?;
    let mut conn = std::pin::pin!(conn);
    let work = async {
        sender.ready().await.map_err(|e| go_text(&e))?;
        let resp = sender.send_request(req).await.map_err(|e| go_text(&e))?;
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get(LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(str::to_owned);
        let body = if is_final(status, location.as_deref()) {
            *phase = Phase::Body(status);
            read_body(resp.into_body()).await
        } else {
            Ok(String::new())
        };
        Ok(Exchange {
            status,
            location,
            body,
        })
    };
    let mut work = std::pin::pin!(work);
    tokio::select! {
        biased;
        r = &mut work => r,
        // The connection ended first (closed by the server, or an I/O error): the request side
        // sees the same end and reports it.
        _ = &mut conn => work.await,
    }
}

/// Up to [`MAX_BODY`] bytes of `body`, decoded lossily; `Err` is a read error (kubelet treats
/// it as a prober error).
async fn read_body(mut body: Incoming) -> Result<String, String> {
    let mut out = Vec::new();
    while out.len() < MAX_BODY {
        match body.frame().await {
            None => break,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data);
                }
            }
            Some(Err(e)) if e.is_incomplete_message() => return Err("unexpected EOF".into()),
            Some(Err(e)) => return Err(go_text(&e)),
        }
    }
    out.truncate(MAX_BODY);
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A hyper error in the words Go's client uses for the same event.
fn go_text(e: &hyper::Error) -> String {
    if e.is_incomplete_message() || e.is_closed() || e.is_canceled() {
        "EOF".into()
    } else if e.is_parse() {
        "net/http: HTTP/1.x transport connection broken: malformed HTTP response".into()
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests;
