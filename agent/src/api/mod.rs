//! Kubernetes API helpers shared by the node and Pod sides: the closed kind of a failed
//! request (the `kind` label of the API error metrics) and the name of an Event object.

use std::fmt;

/// Why a Kubernetes API request failed, as a closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ApiErrorKind {
    /// 403: RBAC or the Node authorizer said no.
    Forbidden,
    /// 404: the object is gone.
    NotFound,
    /// 409: a conflicting write (resourceVersion, UID precondition).
    Conflict,
    /// 422: the server refused the object as invalid.
    Invalid,
    /// The request ran past its deadline (ours, or a 408/504 from the server).
    Timeout,
    /// Anything else: connection refused, 5xx, a client-side error.
    Other,
}

impl ApiErrorKind {
    /// Every kind, for pre-creating metric series.
    pub(crate) const ALL: [ApiErrorKind; 6] = [
        Self::Forbidden,
        Self::NotFound,
        Self::Conflict,
        Self::Invalid,
        Self::Timeout,
        Self::Other,
    ];

    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::Invalid => "invalid",
            Self::Timeout => "timeout",
            Self::Other => "other",
        }
    }

    /// The kind of a client error.
    pub(crate) fn of(err: &kube::Error) -> Self {
        match err {
            kube::Error::Api(s) => match s.code {
                403 => Self::Forbidden,
                404 => Self::NotFound,
                409 => Self::Conflict,
                422 => Self::Invalid,
                408 | 504 => Self::Timeout,
                _ => Self::Other,
            },
            _ => Self::Other,
        }
    }
}

impl fmt::Display for ApiErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Longest object name the API server accepts (a DNS subdomain).
const MAX_NAME: usize = 253;

/// The name of an Event about object `regarding`, unique by `suffix` (kubelet and client-go use
/// `<name>.<hex nanoseconds>`). Valid for every valid object name: the name part is shortened
/// so the whole stays within 253 characters, and it never ends in `.` or `-`.
pub(crate) fn event_name(regarding: &str, suffix: &str) -> String {
    let room = MAX_NAME.saturating_sub(suffix.len() + 1);
    let mut head = &regarding[..regarding.len().min(room)];
    while !head.is_char_boundary(head.len()) {
        head = &head[..head.len() - 1];
    }
    let head = head.trim_end_matches(['.', '-']);
    if head.is_empty() {
        suffix.to_owned()
    } else {
        format!("{head}.{suffix}")
    }
}

#[cfg(test)]
mod tests;
