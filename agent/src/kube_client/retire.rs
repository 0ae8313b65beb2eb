//! Connections that end when the client identity is replaced. Each connection the pool opens
//! watches [`ClientIdentity`]'s replacements; after one, its reads and writes fail, so an idle
//! connection leaves the pool at once and one in use fails its request (the caller retries,
//! as after any dropped connection). The next request then opens a connection, whose
//! handshake presents the new certificate. This is kubelet's behaviour on a client
//! certificate rotation (it closes every connection of its transport).

use std::{
    future::Future,
    io,
    pin::Pin,
    task::{Context, Poll},
};

use hyper::{
    Uri,
    rt::{Read, ReadBufCursor, Write},
};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::sync::watch;
use tower::{BoxError, Service};

use super::identity::ClientIdentity;

/// A connector whose connections end at the next identity replacement.
#[derive(Clone)]
pub(super) struct Retiring<C> {
    inner: C,
    identity: ClientIdentity,
}

impl<C> Retiring<C> {
    /// `inner`'s connections, ended when `identity` is replaced.
    pub(super) fn new(inner: C, identity: ClientIdentity) -> Self {
        Self { inner, identity }
    }
}

impl<C> Service<Uri> for Retiring<C>
where
    C: Service<Uri>,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = RetiringIo<C::Response>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        // Subscribed before the handshake: a replacement during it ends this connection too.
        let replaced = self.identity.replacements();
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            let io = connecting.await.map_err(Into::into)?;
            Ok(RetiringIo::new(io, replaced))
        })
    }
}

/// One connection, ended by the next identity replacement.
pub(super) struct RetiringIo<T> {
    inner: T,
    replaced: Pin<Box<dyn Future<Output = ()> + Send>>,
    retired: bool,
}

impl<T> RetiringIo<T> {
    fn new(inner: T, mut replaced: watch::Receiver<u64>) -> Self {
        let replaced = Box::pin(async move {
            if replaced.changed().await.is_err() {
                // The identity is gone with every client that could replace it.
                std::future::pending::<()>().await;
            }
        });
        Self {
            inner,
            replaced,
            retired: false,
        }
    }

    /// Whether the identity was replaced since the connection was made; registers `cx` to be
    /// woken when it is.
    fn retired(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.retired && self.replaced.as_mut().poll(cx).is_ready() {
            self.retired = true;
        }
        self.retired
    }
}

fn retired_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "connection closed: the client certificate was replaced",
    )
}

impl<T: Read + Unpin> Read for RetiringIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        if self.retired(cx) {
            return Poll::Ready(Err(retired_error()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for RetiringIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.retired(cx) {
            return Poll::Ready(Err(retired_error()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.retired(cx) {
            return Poll::Ready(Err(retired_error()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
}

impl<T: Connection> Connection for RetiringIo<T> {
    fn connected(&self) -> Connected {
        self.inner.connected()
    }
}
