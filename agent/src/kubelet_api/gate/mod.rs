//! Who is calling and may they: kubelet's authentication (x509 client certificate first, then
//! a bearer token through TokenReview; anonymous is refused) and authorization (a
//! SubjectAccessReview on `nodes/<subresource>`), with kubelet's cache times.

use std::{sync::Arc, time::Duration};

use hyper::Method;
use tokio::sync::{Mutex, Semaphore};
use tracing::warn;

use super::{
    authz::{self, Subresource, Verb},
    cache::TtlCache,
    review::{AccessRequest, ReviewError, Reviewer, UserInfo},
};
use crate::errors::error_chain;

/// Token review answers, valid or not, are kept this long (kubelet's `cacheTTL`).
pub(super) const TOKEN_TTL: Duration = Duration::from_secs(120);
/// Allowed decisions are kept this long (kubelet's `cacheAuthorizedTTL`).
pub(super) const ALLOWED_TTL: Duration = Duration::from_secs(300);
/// Denied decisions are kept this long (kubelet's `cacheUnauthorizedTTL`).
pub(super) const DENIED_TTL: Duration = Duration::from_secs(30);

/// Reviews under way at once, at most: a review outlives the connection that asked for it
/// ([`detached`]), so this, not the connection cap, bounds what a flood of distinct bearer
/// tokens makes the agent ask of the API server. A connection waits for a free one.
pub(super) const MAX_REVIEWS: usize = 32;

/// A refused request, with kubelet's status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// 401: no valid credentials.
    Unauthorized,
    /// 403: authenticated, not allowed.
    Forbidden(String),
    /// 500: the access review could not be made.
    ReviewFailed(String),
}

impl Refusal {
    /// HTTP status.
    pub(super) fn status(&self) -> u16 {
        match self {
            Self::Unauthorized => 401,
            Self::Forbidden(_) => 403,
            Self::ReviewFailed(_) => 500,
        }
    }

    /// Response body.
    pub(super) fn body(&self) -> &str {
        match self {
            Self::Unauthorized => "Unauthorized",
            Self::Forbidden(m) | Self::ReviewFailed(m) => m,
        }
    }
}

/// The bearer token of an `Authorization` header value (scheme case-insensitive).
pub(super) fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

/// Authentication and authorization with their caches; shared by all connections.
pub(super) struct Gate {
    node: String,
    reviewer: Arc<dyn Reviewer>,
    tokens: Arc<Mutex<TtlCache<String, Option<UserInfo>>>>,
    decisions: Arc<Mutex<TtlCache<AccessRequest, bool>>>,
    reviews: Arc<Semaphore>,
}

impl Gate {
    /// A gate for Node `node`.
    pub(super) fn new(node: String, reviewer: Arc<dyn Reviewer>) -> Self {
        Self {
            node,
            reviewer,
            tokens: Arc::new(Mutex::new(TtlCache::new(TOKEN_TTL, TOKEN_TTL))),
            decisions: Arc::new(Mutex::new(TtlCache::new(ALLOWED_TTL, DENIED_TTL))),
            reviews: Arc::new(Semaphore::new(MAX_REVIEWS)),
        }
    }

    /// The caller: the verified certificate's user, else the bearer token's.
    pub(super) async fn authenticate(
        &self,
        cert_user: Option<&UserInfo>,
        authorization: Option<&str>,
    ) -> Option<UserInfo> {
        if let Some(u) = cert_user {
            return Some(u.clone());
        }
        let token = bearer_token(authorization?)?.to_owned();
        if let Some(known) = self.tokens.lock().await.get(&token) {
            return known;
        }
        let review = self.reviewer.review_token(token.clone());
        let cache = self.tokens.clone();
        detached(&self.reviews, "token review", async move {
            let user = review.await?;
            let valid = user.is_some();
            cache.lock().await.put(token, user.clone(), valid);
            Ok(user)
        })
        .await
        .flatten()
    }

    /// Whether `user` may make this request.
    pub(super) async fn authorize(
        &self,
        user: UserInfo,
        method: &Method,
        path: &str,
    ) -> Result<(), Refusal> {
        let (verb, subresource) = authz::required(method, path);
        let req = AccessRequest {
            user,
            verb,
            subresource,
            node: self.node.clone(),
        };
        let cached = self.decisions.lock().await.get(&req);
        let allowed = match cached {
            Some(a) => a,
            None => {
                let review = self.reviewer.review_access(req.clone());
                let (cache, key) = (self.decisions.clone(), req.clone());
                let answer = detached(&self.reviews, "access review", async move {
                    let a = review.await?;
                    cache.lock().await.put(key, a, a);
                    Ok(a)
                })
                .await;
                let Some(a) = answer else {
                    return Err(refusal(&req.user.name, verb, subresource, true));
                };
                a
            }
        };
        if allowed {
            Ok(())
        } else {
            Err(refusal(&req.user.name, verb, subresource, false))
        }
    }

    /// Authenticate, then authorize.
    pub(super) async fn admit(
        &self,
        cert_user: Option<&UserInfo>,
        authorization: Option<&str>,
        method: &Method,
        path: &str,
    ) -> Result<UserInfo, Refusal> {
        let user = self
            .authenticate(cert_user, authorization)
            .await
            .ok_or(Refusal::Unauthorized)?;
        self.authorize(user.clone(), method, path).await?;
        Ok(user)
    }
}

/// Runs a review and the caching of its answer on a task of its own, and waits for it. A
/// connection can be closed while its review is under way (under a flood of connections the
/// server closes the oldest for a newer one, `server.rs`); the review still completes and its
/// answer is cached, so the next connection with the same credentials is answered at once.
/// Were the review dropped with its connection, a client whose connections never outlive one
/// review round trip would never get an answer. Each review has its own deadline
/// ([`super::review`]), so the task ends; at most [`MAX_REVIEWS`] run at once. A review that
/// fails or does not complete is logged as `what` and answers `None`.
async fn detached<T: Send + 'static>(
    reviews: &Arc<Semaphore>,
    what: &'static str,
    work: impl Future<Output = Result<T, ReviewError>> + Send + 'static,
) -> Option<T> {
    // The semaphore is never closed.
    let permit = reviews.clone().acquire_owned().await.ok();
    let done = tokio::spawn(async move {
        let _permit = permit;
        work.await
    })
    .await;
    match done {
        Ok(Ok(answer)) => Some(answer),
        Ok(Err(e)) => {
            warn!(error = %error_chain(&e), kind = %e.kind(), "{what} failed");
            None
        }
        Err(e) => {
            warn!(error = %e, "{what} did not complete");
            None
        }
    }
}

fn refusal(user: &str, verb: Verb, sub: Subresource, failed: bool) -> Refusal {
    if failed {
        Refusal::ReviewFailed(authz::review_failed_message(user, verb, sub))
    } else {
        Refusal::Forbidden(authz::forbidden_message(user, verb, sub))
    }
}

#[cfg(test)]
mod tests;
