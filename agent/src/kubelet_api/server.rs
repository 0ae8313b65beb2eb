//! The HTTPS accept loop: a TLS handshake with a deadline per connection, the verified client
//! certificate turned into a user, then HTTP/1.1 with a header deadline. On shutdown it stops
//! accepting and closes open connections after their current response.

use std::{sync::Arc, time::Duration};

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::ServerConfig;
use tokio::{net::TcpListener, sync::watch};
use tokio_rustls::TlsAcceptor;
use tracing::{Instrument, debug, debug_span, warn};

use super::{handler, review::UserInfo, x509};

/// A client that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);
/// A client that has not sent its request headers by then is dropped.
const HEADER_DEADLINE: Duration = Duration::from_secs(30);

/// Open responses get this long to finish on shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The user of a verified client certificate: CN, with the O values as groups.
fn cert_user(der: &[u8]) -> Option<UserInfo> {
    let s = x509::subject(der)?;
    (!s.common_name.is_empty())
        .then(|| UserInfo::new(s.common_name, String::new(), s.organizations))
}

/// Serves until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    api: Arc<handler::Api>,
    mut shutdown: watch::Receiver<bool>,
) {
    let acceptor = TlsAcceptor::from(tls);
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
        let acceptor = acceptor.clone();
        let api = api.clone();
        let mut sd = shutdown.clone();
        tokio::spawn(
            async move {
                let tls = match tokio::time::timeout(HANDSHAKE_DEADLINE, acceptor.accept(tcp)).await
                {
                    Ok(Ok(s)) => s,
                    Ok(Err(error)) => return debug!(%error, "tls handshake failed"),
                    Err(_) => return debug!("tls handshake timed out"),
                };
                let user = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first())
                    .and_then(|c| cert_user(c));
                let service = service_fn(move |req| {
                    let (api, user) = (api.clone(), user.clone());
                    async move {
                        Ok::<_, std::convert::Infallible>(handler::handle(api, user, req).await)
                    }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_DEADLINE)
                    .serve_connection(TokioIo::new(tls), service)
                    // An exec's 101 hands the connection to its session.
                    .with_upgrades();
                tokio::pin!(conn);
                let result = tokio::select! {
                    r = conn.as_mut() => r,
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
                    debug!(%error, "kubelet api connection ended with an error");
                }
            }
            .instrument(debug_span!("kubelet_api_conn", %peer)),
        );
    }
}
