//! The pure half of the `httpGet` handler: the URL kubelet builds from an `httpGet`, how a redirect's
//! `Location` resolves against it, the request headers kubelet sends, and what a final status
//! means for a probe.

use std::fmt;

use super::{model::Scheme, outcome::Outcome, tcp::join_host_port};

/// kubelet's `User-Agent` for probes: `kube-probe/<major>.<minor>` of the API level the node
/// reports (`kubeletVersion` v1.37).
pub(crate) const USER_AGENT: &str = "kube-probe/1.37";

/// Most redirects followed; one more is a failure (Go's client default).
pub(crate) const MAX_REDIRECTS: u32 = 10;

/// Where one request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    /// HTTP or HTTPS.
    pub scheme: Scheme,
    /// Host name or IP literal, without brackets.
    pub host: String,
    pub port: u16,
    /// Path and query as given (`""` is the root).
    pub path: String,
}

impl Url {
    /// kubelet's URL for an `httpGet`: a relative path gains its leading slash.
    pub(crate) fn new(scheme: Scheme, host: &str, port: u16, path: &str) -> Self {
        let path = if path.is_empty() || path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        };
        Self {
            scheme,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            path,
        }
    }

    /// `host:port`, as the `Host` header carries it.
    pub(crate) fn authority(&self) -> String {
        join_host_port(&self.host, self.port)
    }

    /// The request target: the path and query, never empty, without a fragment.
    pub(crate) fn target(&self) -> &str {
        let p = self.path.split('#').next().unwrap_or_default();
        if p.is_empty() { "/" } else { p }
    }

    /// Where a `Location` points, resolved against this URL; `None` when it cannot be
    /// followed (unparsable, or a scheme other than http and https).
    pub(crate) fn join(&self, location: &str) -> Option<Url> {
        if location.starts_with("//") {
            return self.absolute(&format!("{}:{location}", self.scheme.as_str()));
        }
        if location.contains("://") {
            return self.absolute(location);
        }
        let path = if location.starts_with('/') {
            location.to_owned()
        } else {
            let base = self.target().split('?').next().unwrap_or("/");
            let dir = &base[..base.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{location}")
        };
        Some(Url {
            path: remove_dot_segments(&path),
            ..self.clone()
        })
    }

    fn absolute(&self, location: &str) -> Option<Url> {
        let uri: hyper::Uri = location.parse().ok()?;
        let scheme = match uri.scheme_str()? {
            s if s.eq_ignore_ascii_case("http") => Scheme::Http,
            s if s.eq_ignore_ascii_case("https") => Scheme::Https,
            _ => return None,
        };
        let default_port = match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        };
        let host = uri.host()?;
        Some(Url::new(
            scheme,
            host,
            uri.port_u16().unwrap_or(default_port),
            uri.path_and_query().map_or("", |p| p.as_str()),
        ))
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}{}",
            self.scheme.as_str(),
            self.authority(),
            self.path
        )
    }
}

/// RFC 3986 section 5.2.4 (`remove_dot_segments`) on the path part (the query is kept as is).
fn remove_dot_segments(path_and_query: &str) -> String {
    let (path, query) = match path_and_query.find('?') {
        Some(i) => path_and_query.split_at(i),
        None => (path_and_query, ""),
    };
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *seg {
            "." if last => out.push(""),
            "." => {}
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    let mut joined = out.join("/");
    if !joined.starts_with('/') {
        joined.insert(0, '/');
    }
    joined + query
}

/// The headers of a probe request, in order: `Host`, the probe's own headers, then kubelet's
/// defaults where the probe gave none — `User-Agent: kube-probe/…` and `Accept: */*` (an
/// empty value given for either removes it) — and `Connection: close` (kubelet keeps no
/// connection alive). No `Accept-Encoding`: kubelet asks for no compression.
pub(crate) fn request_headers(host: &str, given: &[(String, String)]) -> Vec<(String, String)> {
    let has = |name: &str| given.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut out = vec![("Host".to_owned(), host.to_owned())];
    for (name, value) in given {
        let defaulted =
            name.eq_ignore_ascii_case("User-Agent") || name.eq_ignore_ascii_case("Accept");
        if name.eq_ignore_ascii_case("Host") || (defaulted && value.is_empty()) {
            continue;
        }
        out.push((name.clone(), value.clone()));
    }
    if !has("User-Agent") {
        out.push(("User-Agent".into(), USER_AGENT.into()));
    }
    if !has("Accept") {
        out.push(("Accept".into(), "*/*".into()));
    }
    out.push(("Connection".into(), "close".into()));
    out
}

/// The `Host` a probe asks for: its own `Host` header (the first), else the URL's authority.
pub(crate) fn host_header(url: &Url, given: &[(String, String)]) -> String {
    given
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("Host"))
        .map_or_else(|| url.authority(), |(_, v)| v.clone())
}

/// Whether a response with this status is a redirect Go's client follows.
pub(crate) fn is_followed_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// What the final response means: 2xx success; 3xx (a redirect not followed) success with
/// kubelet's warning; anything else failure with kubelet's text (never the body).
pub(crate) fn status_outcome(status: u16, body: &str) -> Outcome {
    match status {
        200..=299 => Outcome::Success,
        300..=399 => Outcome::Warning(format!("Probe terminated redirects, Response body: {body}")),
        _ => Outcome::Failure(format!("HTTP probe failed with statuscode: {status}")),
    }
}

#[cfg(test)]
mod tests;
