//! The HTTPS accept loop: each connection takes a place under the connection cap
//! ([`Conns`]), then a TLS handshake with a deadline, the verified client certificate turned
//! into a user, then HTTP/1.1 with a deadline for each request's headers and a bounded read
//! buffer. On shutdown it stops accepting and closes open connections after their current
//! response.

use std::{sync::Arc, time::Duration};

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::ServerConfig;
use tokio::{net::TcpListener, sync::watch};
use tokio_rustls::TlsAcceptor;
use tracing::{Instrument, debug, debug_span, warn};

use super::{
    conns::{Conns, Evicted},
    context, handler,
    limits::{Limit, LimitMetrics},
    review::UserInfo,
    x509,
};
use crate::config::Limits;

/// The most a connection buffers while reading a request (hyper's smallest allowed is 8 KiB):
/// request headers beyond it are refused (`431`). kubelet allows 1 MiB of headers; the API
/// server's requests carry a few hundred bytes, so 64 KiB bounds memory per connection.
const MAX_BUF: usize = 64 << 10;

/// Open responses get this long to finish on shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The user of a verified client certificate: CN, with the O values as groups.
fn cert_user(der: &[u8]) -> Option<UserInfo> {
    let s = x509::subject(der)?;
    (!s.common_name.is_empty())
        .then(|| UserInfo::new(s.common_name, String::new(), s.organizations))
}

/// Resolves when the connection was closed to make room for a newer one; never once it
/// authenticated (its sender is dropped then).
async fn evicted(rx: Evicted) {
    if rx.await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Serves until `shutdown` turns true.
pub(super) async fn serve(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    api: Arc<context::Api>,
    limits: Limits,
    metrics: LimitMetrics,
    mut shutdown: watch::Receiver<bool>,
) {
    let acceptor = TlsAcceptor::from(tls);
    let conns = Conns::new(limits.max_connections, metrics.clone());
    loop {
        let (tcp, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(error) => {
                    // EMFILE and the like: the listener itself is fine, the next accept may work.
                    warn!(%error, "kubelet api accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = async { let _ = shutdown.wait_for(|s| *s).await; } => return,
        };
        let Some((entry, evict)) = conns.enter().await else {
            debug!(%peer, "kubelet api connection cap reached: connection closed");
            continue;
        };
        let acceptor = acceptor.clone();
        let api = api.clone();
        let metrics = metrics.clone();
        let mut sd = shutdown.clone();
        tokio::spawn(
            async move {
                let evict = evicted(evict);
                tokio::pin!(evict);
                let handshake = tokio::time::timeout(limits.handshake, acceptor.accept(tcp));
                let tls = tokio::select! {
                    r = handshake => match r {
                        Ok(Ok(s)) => s,
                        Ok(Err(error)) => return debug!(%error, "tls handshake failed"),
                        Err(_) => {
                            metrics.hit(Limit::Handshake);
                            return debug!("tls handshake timed out");
                        }
                    },
                    () = &mut evict => return debug!("closed for a newer connection"),
                };
                let user = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .and_then(|c| cert_user(c));
                if user.is_some() {
                    entry.authenticated();
                } else {
                    entry.handshaken();
                }
                let this = entry.clone();
                let service = service_fn(move |req| {
                    let (api, user, entry) = (api.clone(), user.clone(), entry.clone());
                    async move {
                        let resp = handler::handle(api, user, req).await;
                        if resp.extensions().get::<handler::Admitted>().is_some() {
                            entry.authenticated();
                        }
                        Ok::<_, std::convert::Infallible>(resp)
                    }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits.header)
                    .max_buf_size(MAX_BUF)
                    .serve_connection(TokioIo::new(tls), service)
                    // An exec's 101 hands the connection to its session.
                    .with_upgrades();
                tokio::pin!(conn);
                let result = tokio::select! {
                    r = conn.as_mut() => r,
                    () = &mut evict => return debug!("closed for a newer connection"),
                    () = async { let _ = sd.wait_for(|s| *s).await; } => {
                        conn.as_mut().graceful_shutdown();
                        // A followed log never ends on its own: bound the wait.
                        match tokio::time::timeout(SHUTDOWN_GRACE, conn).await {
                            Ok(r) => r,
                            Err(_) => return,
                        }
                    }
                };
                if let Err(error) = result {
                    // An authenticated keep-alive connection left idle ends the same way.
                    if error.is_timeout() && !this.is_authenticated() {
                        metrics.hit(Limit::Header);
                    }
                    debug!(%error, "kubelet api connection ended with an error");
                }
            }
            .instrument(debug_span!("kubelet_api_conn", %peer)),
        );
    }
}
