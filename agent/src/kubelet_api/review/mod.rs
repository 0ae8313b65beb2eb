//! The two delegated reviews kubelet's API makes, behind [`Reviewer`]: TokenReview (who is this
//! bearer token?) and SubjectAccessReview (may this user do this on `nodes/<subresource>`?).
//! [`KubeReviewer`] asks the API server, each call with a deadline; tests mock the trait.

use std::{collections::BTreeMap, time::Duration};

use futures::{FutureExt, future::BoxFuture};
use k8s_openapi::api::{
    authentication::v1::{TokenReview, TokenReviewSpec},
    authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec},
};
use kube::{Api, Client, api::PostParams};

use super::authz::{Subresource, Verb};
use crate::api::ApiErrorKind;

/// Every authenticated user is in this group too (kubelet's `AuthenticatedGroupAdder`).
pub(super) const AUTHENTICATED: &str = "system:authenticated";

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct UserInfo {
    pub name: String,
    /// UID (empty for certificate users).
    pub uid: String,
    /// Groups, `system:authenticated` included.
    pub groups: Vec<String>,
    /// Extra attributes from the token review.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with `groups` plus `system:authenticated`.
    pub(crate) fn new(name: String, uid: String, mut groups: Vec<String>) -> Self {
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.into());
        }
        Self {
            name,
            uid,
            groups,
            extra: BTreeMap::new(),
        }
    }
}

/// One authorization question: may `user` do `verb` on `nodes/<subresource>` of `node`?
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AccessRequest {
    /// The caller.
    pub user: UserInfo,
    pub verb: Verb,
    /// Subresource of `nodes`.
    pub subresource: Subresource,
    /// This Node's name.
    pub node: String,
}

/// A review that could not be answered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReviewError {
    /// The API server did not answer within the deadline.
    #[error("{review} timed out after {after:?}")]
    TimedOut {
        /// `TokenReview` or `SubjectAccessReview`.
        review: &'static str,
        /// The deadline.
        after: Duration,
    },
    /// The API server refused or failed the request.
    #[error("{review} request failed")]
    Api {
        /// `TokenReview` or `SubjectAccessReview`.
        review: &'static str,
        #[source]
        source: kube::Error,
    },
}

impl ReviewError {
    /// The closed kind, as the API error metrics label it.
    pub(crate) fn kind(&self) -> ApiErrorKind {
        match self {
            Self::TimedOut { .. } => ApiErrorKind::Timeout,
            Self::Api { source, .. } => ApiErrorKind::of(source),
        }
    }
}

/// Answers the two reviews.
pub(crate) trait Reviewer: Send + Sync + 'static {
    /// The user a bearer token belongs to; `None` when the token is not valid.
    fn review_token(
        &self,
        token: String,
    ) -> BoxFuture<'static, Result<Option<UserInfo>, ReviewError>>;
    /// Whether the request is allowed.
    fn review_access(&self, req: AccessRequest) -> BoxFuture<'static, Result<bool, ReviewError>>;
}

/// Asks the API server.
#[derive(Clone)]
pub(crate) struct KubeReviewer {
    client: Client,
    deadline: Duration,
}

impl KubeReviewer {
    /// Each review gives up after `deadline`.
    pub(crate) fn new(client: Client, deadline: Duration) -> Self {
        Self { client, deadline }
    }
}

impl Reviewer for KubeReviewer {
    fn review_token(
        &self,
        token: String,
    ) -> BoxFuture<'static, Result<Option<UserInfo>, ReviewError>> {
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let deadline = self.deadline;
        async move {
            let review = TokenReview {
                spec: TokenReviewSpec {
                    token,
                    ..TokenReviewSpec::default()
                },
                ..TokenReview::default()
            };
            let done = call("TokenReview", deadline, async {
                api.create(&PostParams::default(), &review).await
            })
            .await?;
            let status = done.status.unwrap_or_default();
            if status.authenticated != Some(true) {
                return Ok(None);
            }
            let u = status.user.unwrap_or_default();
            let mut user = UserInfo::new(
                u.username.unwrap_or_default(),
                u.uid.unwrap_or_default(),
                u.groups.unwrap_or_default(),
            );
            user.extra = u.extra.unwrap_or_default();
            Ok(Some(user))
        }
        .boxed()
    }

    fn review_access(&self, req: AccessRequest) -> BoxFuture<'static, Result<bool, ReviewError>> {
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let deadline = self.deadline;
        async move {
            let review = SubjectAccessReview {
                spec: access_spec(&req),
                ..SubjectAccessReview::default()
            };
            let done = call("SubjectAccessReview", deadline, async {
                api.create(&PostParams::default(), &review).await
            })
            .await?;
            Ok(done.status.is_some_and(|s| s.allowed))
        }
        .boxed()
    }
}

/// The SubjectAccessReview spec kubelet sends for `req`.
pub(super) fn access_spec(req: &AccessRequest) -> SubjectAccessReviewSpec {
    SubjectAccessReviewSpec {
        user: Some(req.user.name.clone()),
        uid: Some(req.user.uid.clone()).filter(|u| !u.is_empty()),
        groups: Some(req.user.groups.clone()),
        extra: Some(req.user.extra.clone()).filter(|e| !e.is_empty()),
        resource_attributes: Some(ResourceAttributes {
            verb: Some(req.verb.as_str().into()),
            group: Some(String::new()),
            version: Some("v1".into()),
            resource: Some("nodes".into()),
            subresource: Some(req.subresource.as_str().into()),
            name: Some(req.node.clone()),
            ..ResourceAttributes::default()
        }),
        ..SubjectAccessReviewSpec::default()
    }
}

async fn call<T>(
    review: &'static str,
    deadline: Duration,
    f: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, ReviewError> {
    match tokio::time::timeout(deadline, f).await {
        Err(_) => Err(ReviewError::TimedOut {
            review,
            after: deadline,
        }),
        Ok(r) => r.map_err(|source| ReviewError::Api { review, source }),
    }
}

#[cfg(test)]
mod tests;
