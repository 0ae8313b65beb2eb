//! What the handlers act on that a probe and a hook spell the same way: the `httpGet` target
//! (the probes' model reads it from the container, for probes and hooks alike). Pure.

/// `httpGet.scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// Plain HTTP (the default).
    Http,
    /// HTTPS; the server's certificate is not verified, as kubelet does not verify it.
    Https,
}

impl Scheme {
    /// The URL scheme.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

/// An `httpGet` action of a probe or a hook, its port resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpGet {
    /// HTTP or HTTPS.
    pub scheme: Scheme,
    /// Host to connect to; `None`: the Pod IP.
    pub host: Option<String>,
    /// Port to connect to.
    pub port: u16,
    /// Path (and query) as given; empty means `/`.
    pub path: String,
    /// `httpHeaders`, in order (a `Host` header sets the request's host).
    pub headers: Vec<(String, String)>,
}
