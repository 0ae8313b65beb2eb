//! PURE: the query of `/containerLogs` -> [`LogQuery`], decoded and validated as kubelet does
//! (v1 `PodLogOptions` from query parameters, then `ValidatePodLogOptions`).
//!
//! Booleans follow apimachinery's query conversion: absent is false; `0` and `false` (any case)
//! are false; any other value, even empty, is true. Unknown parameters are ignored (newer API
//! servers may add some, such as `stream`). Only the first value of a repeated parameter counts.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// What the caller asked of a container log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LogQuery {
    /// Keep the stream open and send new lines as they are written.
    pub follow: bool,
    /// Only the last N lines (selected before streaming).
    pub tail_lines: Option<u64>,
    /// Only lines written in the last N seconds (≥ 1).
    pub since_seconds: Option<u64>,
    /// Only lines written at or after this time.
    pub since_time: Option<Timestamp>,
    /// Prefix each line with its time (`RFC3339NanoFixed` and a space).
    pub timestamps: bool,
    /// The previous run of the container.
    pub previous: bool,
    /// Stop after this many bytes (≥ 1), counted after the timestamp prefix.
    pub limit_bytes: Option<u64>,
}

impl LogQuery {
    /// The earliest line time asked for: the later of `now - since_seconds` and `since_time`.
    pub(crate) fn since(&self, now: Timestamp) -> Option<Timestamp> {
        let by_seconds = self.since_seconds.and_then(|s| {
            let s = i64::try_from(s).ok()?;
            now.checked_sub(SignedDuration::from_secs(s)).ok()
        });
        match (by_seconds, self.since_time) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A query kubelet refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QueryError {
    /// A value does not parse (400).
    #[error("cannot decode {param}={value:?}")]
    Decode {
        /// The parameter.
        param: &'static str,
        /// Its value.
        value: String,
    },
    /// The values parse but break a rule (422); the message is kubelet's field error.
    #[error("{0}")]
    Invalid(String),
}

impl QueryError {
    /// The HTTP status kubelet answers with.
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::Decode { .. } => 400,
            Self::Invalid(_) => 422,
        }
    }

    /// The response body: kubelet's text, with the field error for an invalid query.
    pub(crate) fn body(&self) -> String {
        match self {
            Self::Decode { .. } => r#"{"message": "Unable to decode query."}"#.into(),
            Self::Invalid(detail) => {
                serde_json::json!({ "message": format!("Invalid request: {detail}") }).to_string()
            }
        }
    }
}

fn boolean(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

fn integer(param: &'static str, v: &str) -> Result<i64, QueryError> {
    v.parse().map_err(|_| QueryError::Decode {
        param,
        value: v.into(),
    })
}

/// A validated integer that must be at least `min`, with kubelet's message otherwise.
fn at_least(param: &'static str, v: i64, min: i64) -> Result<u64, QueryError> {
    u64::try_from(v).ok().filter(|_| v >= min).ok_or_else(|| {
        let rule = if min == 0 {
            "must be greater than or equal to 0"
        } else {
            "must be greater than 0"
        };
        QueryError::Invalid(format!("{param}: Invalid value: {v}: {rule}"))
    })
}

/// Decodes and validates the raw query string (without `?`).
pub(crate) fn parse(raw: &str) -> Result<LogQuery, QueryError> {
    let mut first = std::collections::HashMap::new();
    for (k, v) in form_urlencoded::parse(raw.as_bytes()) {
        first
            .entry(k.into_owned())
            .or_insert_with(|| v.into_owned());
    }
    let get = |k: &str| first.get(k).map(String::as_str);
    let mut q = LogQuery {
        follow: get("follow").is_some_and(boolean),
        timestamps: get("timestamps").is_some_and(boolean),
        previous: get("previous").is_some_and(boolean),
        ..LogQuery::default()
    };
    let tail = get("tailLines")
        .map(|v| integer("tailLines", v))
        .transpose()?;
    let limit = get("limitBytes")
        .map(|v| integer("limitBytes", v))
        .transpose()?;
    let secs = get("sinceSeconds")
        .map(|v| integer("sinceSeconds", v))
        .transpose()?;
    q.since_time = match get("sinceTime").filter(|v| !v.is_empty()) {
        Some(v) => Some(v.parse::<Timestamp>().map_err(|_| QueryError::Decode {
            param: "sinceTime",
            value: v.into(),
        })?),
        None => None,
    };
    q.tail_lines = tail.map(|v| at_least("tailLines", v, 0)).transpose()?;
    q.limit_bytes = limit.map(|v| at_least("limitBytes", v, 1)).transpose()?;
    if secs.is_some() && q.since_time.is_some() {
        return Err(QueryError::Invalid(
            "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified".into(),
        ));
    }
    q.since_seconds = secs.map(|v| at_least("sinceSeconds", v, 1)).transpose()?;
    Ok(q)
}

#[cfg(test)]
mod tests;
