//! Service-account tokens for projected `serviceAccountToken` volumes: one TokenRequest
//! (`POST /api/v1/namespaces/{ns}/serviceaccounts/{sa}/token`) bound to the Pod, and kubelet's
//! token-manager rules for when a token is due for refresh and until when it can still be used.
//! Writing the token into a volume and the refresh loop belong to `prepare` and
//! `refresh`.
//!
//! The token is a secret: it never reaches a log line, an error message or Debug output. That
//! is why the answer is read with `request_text` and decoded here: kube's typed `request` logs
//! the whole body at `warn` when it cannot decode it, and this body holds the token.

use std::{fmt, time::Duration};

use k8s_openapi::{
    api::{
        authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec},
        core::v1::ServiceAccount,
    },
    jiff::{SignedDuration, Timestamp},
};
use kube::{Client, Resource, api::PostParams, core::Request};

use super::model::{ConfigError, TokenSpec};
use crate::{api::ApiErrorKind, backoff::API_RETRY, errors::error_chain};

/// The shortest lifetime the API server issues (its validation refuses less).
pub(crate) const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest lifetime the API server accepts (2³² s).
pub(crate) const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

#[derive(Clone, PartialEq, Eq)]
pub(crate) struct IssuedToken {
    /// The bearer token. Secret: [`IssuedToken`]'s Debug leaves it out.
    pub token: String,
    /// When it was issued: the expiry less the lifetime the server granted (kubelet's `iat`).
    pub issued_at: Timestamp,
    /// `status.expirationTimestamp`.
    pub expires_at: Timestamp,
}

impl fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedToken")
            .field(
                "token",
                &format_args!("<redacted, {} bytes>", self.token.len()),
            )
            .field("issued_at", &self.issued_at)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Why no token was issued. No message holds a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenError {
    /// The API server refused the request (403, 404 for a missing service account, …) or the
    /// request did not reach it; `message` is the server's, or the client's error chain.
    #[error("{message}")]
    Api {
        /// The closed kind of the failure.
        kind: ApiErrorKind,
        /// What went wrong, in the server's or the client's words.
        message: String,
    },
    /// No answer within the deadline.
    #[error("the token request got no answer within its deadline")]
    Timeout,
    /// The answer carries no token or no expiry, or is not a TokenRequest.
    #[error("the token request's answer is unusable: {what}")]
    Malformed {
        /// What is wrong with it (never any of its content).
        what: String,
    },
}

impl TokenError {
    /// Every value of [`TokenError::kind`].
    #[cfg(test)]
    pub(crate) const KINDS: [&'static str; 7] = [
        "forbidden",
        "not_found",
        "conflict",
        "invalid",
        "timeout",
        "other",
        "malformed",
    ];

    /// Closed metric label: the API error kind, `timeout` or `malformed`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Api { kind, .. } => kind.as_str(),
            Self::Timeout => "timeout",
            Self::Malformed { .. } => "malformed",
        }
    }

    /// The error a container waits with when its token cannot be issued.
    pub(crate) fn config_error(&self, service_account: &str) -> ConfigError {
        ConfigError::Token {
            service_account: service_account.to_owned(),
            why: self.to_string(),
        }
    }

    fn of_kube(err: &kube::Error) -> Self {
        let message = match err {
            kube::Error::Api(status) => status.message.clone(),
            other => error_chain(other),
        };
        Self::Api {
            kind: ApiErrorKind::of(err),
            message,
        }
    }
}

/// The lifetime to ask for: the spec's `expirationSeconds` within what the API server accepts.
pub(crate) fn expiration_seconds(spec: &TokenSpec) -> i64 {
    spec.expiration_seconds
        .clamp(MIN_EXPIRATION_SECONDS, MAX_EXPIRATION_SECONDS)
}

/// The TokenRequest for a token bound to Pod `pod_name`/`pod_uid`: the spec's audience (none:
/// the API server's own audiences) and lifetime. Pure.
pub(crate) fn token_request(pod_name: &str, pod_uid: &str, spec: &TokenSpec) -> TokenRequest {
    TokenRequest {
        metadata: Default::default(),
        spec: Some(TokenRequestSpec {
            audiences: Some(
                spec.audience
                    .iter()
                    .filter(|a| !a.is_empty())
                    .cloned()
                    .collect(),
            ),
            expiration_seconds: Some(expiration_seconds(spec)),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("Pod".to_owned()),
                name: Some(pod_name.to_owned()),
                uid: Some(pod_uid.to_owned()),
            }),
            attestations: None,
        }),
        status: None,
    }
}

/// The token in the server's answer. The lifetime is the one the server granted (its
/// `spec.expirationSeconds`), else the one asked for. Pure.
///
/// # Errors
/// [`TokenError::Malformed`] when the answer has no token or no expiry.
pub(crate) fn issued(
    answer: TokenRequest,
    requested_seconds: i64,
) -> Result<IssuedToken, TokenError> {
    let malformed = |what: &str| TokenError::Malformed {
        what: what.to_owned(),
    };
    let granted = answer
        .spec
        .and_then(|s| s.expiration_seconds)
        .unwrap_or(requested_seconds);
    let status = answer.status.ok_or_else(|| malformed("no status"))?;
    let expires_at = status
        .expiration_timestamp
        .ok_or_else(|| malformed("no status.expirationTimestamp"))?
        .0;
    let token = status
        .token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| malformed("no status.token"))?;
    let issued_at = expires_at
        .checked_sub(SignedDuration::from_secs(granted))
        .unwrap_or(Timestamp::MIN);
    Ok(IssuedToken {
        token,
        issued_at,
        expires_at,
    })
}

/// Ask the API server for a token of `service_account` bound to the Pod, within `timeout`.
///
/// # Errors
/// [`TokenError::Api`] when the server refuses (403, 404 for a missing service account) or
/// cannot be reached; [`TokenError::Timeout`] past the deadline; [`TokenError::Malformed`] for
/// an answer without a token.
///
/// # Cancellation
/// Safe: dropping the future abandons the request; an issued token nobody read simply expires.
pub(crate) async fn request_token(
    client: &Client,
    namespace: &str,
    service_account: &str,
    pod_name: &str,
    pod_uid: &str,
    spec: &TokenSpec,
    timeout: Duration,
) -> Result<IssuedToken, TokenError> {
    let body = token_request(pod_name, pod_uid, spec);
    let bytes = serde_json::to_vec(&body).map_err(|e| TokenError::Malformed {
        what: format!("cannot encode the request: {e}"),
    })?;
    let mut req = Request::new(ServiceAccount::url_path(&(), Some(namespace)))
        .create_subresource("token", service_account, &PostParams::default(), bytes)
        .map_err(|e| TokenError::Api {
            kind: ApiErrorKind::Other,
            message: error_chain(&e),
        })?;
    req.extensions_mut().insert("create_token_request");
    let text = tokio::time::timeout(timeout, client.request_text(req))
        .await
        .map_err(|_| TokenError::Timeout)?
        .map_err(|e| TokenError::of_kube(&e))?;
    // serde_json's message can quote a value of the body, so only the position is kept.
    let answer: TokenRequest = serde_json::from_str(&text).map_err(|e| TokenError::Malformed {
        what: format!(
            "not a TokenRequest (line {}, column {})",
            e.line(),
            e.column()
        ),
    })?;
    issued(answer, expiration_seconds(spec))
}

/// When to refresh `t`: kubelet's rule, at 80 % of its lifetime or once `max` has passed since
/// it was issued, whichever comes first, and never after it expires. Pure.
pub(crate) fn refresh_at(t: &IssuedToken, max: Duration) -> Timestamp {
    let life = t.expires_at.duration_since(t.issued_at);
    let by_share = t.expires_at.checked_sub(life / 5).unwrap_or(t.expires_at);
    let by_age = SignedDuration::try_from(max)
        .ok()
        .and_then(|m| t.issued_at.checked_add(m).ok())
        .unwrap_or(Timestamp::MAX);
    by_share.min(by_age).min(t.expires_at)
}

/// Whether `t` can still be used at `now`: it has not expired (kubelet keeps serving a token
/// whose refresh failed until then). Pure.
pub(crate) fn is_valid(t: &IssuedToken, now: Timestamp) -> bool {
    now <= t.expires_at
}

/// How long to wait before retry number `attempt` (0 is the first) of a failed refresh:
/// [`API_RETRY`]'s curve, whose 7 s cap retries many times inside the shortest refresh window
/// (the last 120 s of a 600 s token).
pub(crate) fn retry_delay(attempt: u32) -> Duration {
    API_RETRY.delay(attempt)
}

#[cfg(test)]
mod tests;
