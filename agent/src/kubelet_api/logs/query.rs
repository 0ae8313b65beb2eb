//! PURE: the query of `/containerLogs` -> [`LogQuery`], decoded and validated as kubelet does
//! (v1 `PodLogOptions` from query parameters, then `ValidatePodLogOptions`).
//!
//! Booleans follow apimachinery's query conversion: absent is false; `0` and `false` (any case)
//! are false; any other value, even empty, is true. Unknown parameters are ignored (newer API
//! servers may add some, such as `stream`). Only the first value of a repeated parameter counts.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// What the caller asked of a container log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogQuery {
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
    pub fn since(&self, now: Timestamp) -> Option<Timestamp> {
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
pub enum QueryError {
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
    pub fn status(&self) -> u16 {
        match self {
            Self::Decode { .. } => 400,
            Self::Invalid(_) => 422,
        }
    }

    /// The response body: kubelet's text, with the field error for an invalid query.
    pub fn body(&self) -> String {
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
pub fn parse(raw: &str) -> Result<LogQuery, QueryError> {
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
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn every_option_the_api_server_sends_is_read() {
        let q = parse("follow=true&previous=true&timestamps=true&sinceSeconds=3600&tailLines=5&limitBytes=100")
            .unwrap();
        assert_eq!(
            q,
            LogQuery {
                follow: true,
                tail_lines: Some(5),
                since_seconds: Some(3600),
                since_time: None,
                timestamps: true,
                previous: true,
                limit_bytes: Some(100),
            }
        );
        let q = parse("sinceTime=2026-11-23T10%3A00%3A00Z").unwrap();
        assert_eq!(q.since_time, Some(ts("2026-11-23T10:00:00Z")));
        assert_eq!(parse("").unwrap(), LogQuery::default());
    }

    #[test]
    fn booleans_are_false_only_for_0_and_false() {
        let table = [
            ("follow=true", true),
            ("follow=1", true),
            ("follow=", true),
            ("follow=yes", true),
            ("follow=0", false),
            ("follow=FALSE", false),
            ("follow=false&follow=true", false),
            ("other=1", false),
        ];
        for (raw, want) in table {
            assert_eq!(parse(raw).unwrap().follow, want, "{raw}");
        }
    }

    #[test]
    fn bad_values_get_kubelets_status_and_message() {
        let table = [
            (
                "tailLines=x",
                400,
                r#"{"message": "Unable to decode query."}"#,
            ),
            (
                "sinceTime=yesterday",
                400,
                r#"{"message": "Unable to decode query."}"#,
            ),
            (
                "tailLines=-1",
                422,
                r#"{"message":"Invalid request: tailLines: Invalid value: -1: must be greater than or equal to 0"}"#,
            ),
            (
                "limitBytes=0",
                422,
                r#"{"message":"Invalid request: limitBytes: Invalid value: 0: must be greater than 0"}"#,
            ),
            (
                "sinceSeconds=0",
                422,
                r#"{"message":"Invalid request: sinceSeconds: Invalid value: 0: must be greater than 0"}"#,
            ),
            (
                "sinceSeconds=5&sinceTime=2026-11-23T10:00:00Z",
                422,
                r#"{"message":"Invalid request: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"}"#,
            ),
        ];
        for (raw, status, body) in table {
            let e = parse(raw).unwrap_err();
            assert_eq!((e.status(), e.body().as_str()), (status, body), "{raw}");
        }
        assert_eq!(parse("tailLines=0").unwrap().tail_lines, Some(0));
    }

    #[test]
    fn since_is_the_later_bound() {
        let now = ts("2026-11-23T10:00:00Z");
        let q = LogQuery {
            since_seconds: Some(60),
            ..LogQuery::default()
        };
        assert_eq!(q.since(now), Some(ts("2026-11-23T09:59:00Z")));
        let q = LogQuery {
            since_seconds: Some(60),
            since_time: Some(ts("2026-11-23T09:59:30Z")),
            ..LogQuery::default()
        };
        assert_eq!(q.since(now), Some(ts("2026-11-23T09:59:30Z")));
        assert_eq!(LogQuery::default().since(now), None);
    }
}
