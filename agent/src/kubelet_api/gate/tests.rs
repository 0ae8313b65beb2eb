use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;

use super::*;
use crate::kubelet_api::review::ReviewError;

/// Tokens `good` (user alice), `slow` (user bob, answered after a second) and `broken`
/// (review fails); alice may `get nodes/proxy`; any user named `flaky` makes the access review
/// fail, and one named `bob` waits a second for its answer (no).
#[derive(Default)]
struct Mock {
    token_calls: AtomicUsize,
    access_calls: AtomicUsize,
}

fn timed_out(review: &'static str) -> ReviewError {
    ReviewError::TimedOut {
        review,
        after: Duration::from_secs(1),
    }
}

impl Reviewer for Mock {
    fn review_token(
        &self,
        token: String,
    ) -> futures::future::BoxFuture<'static, Result<Option<UserInfo>, ReviewError>> {
        self.token_calls.fetch_add(1, Ordering::SeqCst);
        let r = match token.as_str() {
            "good" => Ok(Some(UserInfo::new("alice".into(), "u1".into(), vec![]))),
            "slow" => Ok(Some(UserInfo::new("bob".into(), "u2".into(), vec![]))),
            "broken" => Err(timed_out("TokenReview")),
            _ => Ok(None),
        };
        let slow = token == "slow";
        async move {
            if slow {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            r
        }
        .boxed()
    }

    fn review_access(
        &self,
        req: AccessRequest,
    ) -> futures::future::BoxFuture<'static, Result<bool, ReviewError>> {
        self.access_calls.fetch_add(1, Ordering::SeqCst);
        let slow = req.user.name == "bob";
        let r = if req.user.name == "flaky" {
            Err(timed_out("SubjectAccessReview"))
        } else {
            Ok(req.user.name == "alice"
                && req.verb == Verb::Get
                && req.subresource == Subresource::Proxy
                && req.node == "mac-1")
        };
        async move {
            if slow {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            r
        }
        .boxed()
    }
}

fn gate() -> (Gate, Arc<Mock>) {
    let mock = Arc::new(Mock::default());
    (Gate::new("mac-1".into(), mock.clone()), mock)
}

#[test]
fn bearer_tokens_are_read_like_kubelet() {
    assert_eq!(bearer_token("Bearer abc"), Some("abc"));
    assert_eq!(bearer_token("bearer  abc "), Some("abc"));
    assert_eq!(bearer_token("Basic abc"), None);
    assert_eq!(bearer_token("Bearer "), None);
    assert_eq!(bearer_token("Bearer a b"), None);
}

#[tokio::test(start_paused = true)]
async fn no_credentials_or_a_bad_token_is_401() {
    let (g, _) = gate();
    let get = Method::GET;
    assert_eq!(
        g.admit(None, None, &get, "/pods").await,
        Err(Refusal::Unauthorized)
    );
    for header in ["Bearer nope", "Bearer broken", "Basic x"] {
        let r = g.admit(None, Some(header), &get, "/pods").await;
        assert_eq!(r.unwrap_err().status(), 401, "{header}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_certificate_user_skips_the_token_review() {
    let (g, mock) = gate();
    let alice = UserInfo::new("alice".into(), String::new(), vec!["system:masters".into()]);
    let user = g
        .admit(Some(&alice), Some("Bearer nope"), &Method::GET, "/healthz")
        .await
        .unwrap();
    assert_eq!(user.name, "alice");
    assert_eq!(mock.token_calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn token_answers_are_cached_but_review_failures_are_not() {
    let (g, mock) = gate();
    for _ in 0..3 {
        assert!(g.authenticate(None, Some("Bearer good")).await.is_some());
        assert!(g.authenticate(None, Some("Bearer nope")).await.is_none());
        assert!(g.authenticate(None, Some("Bearer broken")).await.is_none());
    }
    assert_eq!(mock.token_calls.load(Ordering::SeqCst), 2 + 3);
    tokio::time::advance(TOKEN_TTL).await;
    g.authenticate(None, Some("Bearer good")).await;
    assert_eq!(mock.token_calls.load(Ordering::SeqCst), 6);
}

#[tokio::test(start_paused = true)]
async fn denied_is_403_in_kubelets_words_and_cached_30s() {
    let (g, mock) = gate();
    let bob = UserInfo::new("bob".into(), String::new(), vec![]);
    let r = g
        .admit(Some(&bob), None, &Method::GET, "/containerLogs/n/p/c")
        .await;
    assert_eq!(
        r,
        Err(Refusal::Forbidden(
            "Forbidden (user=bob, verb=get, resource=nodes, subresource=proxy)".into()
        ))
    );
    assert_eq!(r.unwrap_err().status(), 403);
    g.admit(Some(&bob), None, &Method::GET, "/containerLogs/n/p/c")
        .await
        .unwrap_err();
    assert_eq!(mock.access_calls.load(Ordering::SeqCst), 1);
    tokio::time::advance(DENIED_TTL).await;
    g.admit(Some(&bob), None, &Method::GET, "/pods")
        .await
        .unwrap_err();
    assert_eq!(mock.access_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn allowed_is_cached_5_minutes() {
    let (g, mock) = gate();
    for _ in 0..3 {
        g.admit(None, Some("Bearer good"), &Method::GET, "/pods")
            .await
            .unwrap();
    }
    assert_eq!(mock.access_calls.load(Ordering::SeqCst), 1);
    tokio::time::advance(ALLOWED_TTL - Duration::from_secs(1)).await;
    g.authorize(
        UserInfo::new("alice".into(), "u1".into(), vec![]),
        &Method::GET,
        "/healthz",
    )
    .await
    .unwrap();
    assert_eq!(mock.access_calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn exec_needs_create_even_for_get() {
    let (g, _) = gate();
    let r = g
        .admit(None, Some("Bearer good"), &Method::GET, "/exec/n/p/c")
        .await;
    assert_eq!(
        r,
        Err(Refusal::Forbidden(
            "Forbidden (user=alice, verb=create, resource=nodes, subresource=proxy)".into()
        ))
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_access_review_is_500_and_not_cached() {
    let (g, mock) = gate();
    let flaky = UserInfo::new("flaky".into(), String::new(), vec![]);
    for _ in 0..2 {
        let r = g.admit(Some(&flaky), None, &Method::GET, "/pods").await;
        assert_eq!(
            r,
            Err(Refusal::ReviewFailed(
                "Authorization error (user=flaky, verb=get, resource=nodes, subresource=proxy)"
                    .into()
            ))
        );
    }
    assert_eq!(mock.access_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_review_outlives_the_connection_that_asked_and_its_answer_is_kept() {
    let (g, mock) = gate();
    let get = Method::GET;
    let admit = || g.admit(None, Some("Bearer slow"), &get, "/pods");
    // The connection is closed while its token review is under way, then while its access
    // review is.
    let short = Duration::from_millis(100);
    assert!(tokio::time::timeout(short, admit()).await.is_err());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(mock.token_calls.load(Ordering::SeqCst), 1);
    assert!(tokio::time::timeout(short, admit()).await.is_err());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(mock.access_calls.load(Ordering::SeqCst), 1);
    // Both answers were kept: the next connection is answered at once, without a review.
    let r = tokio::time::timeout(short, admit())
        .await
        .expect("answered from the caches");
    assert_eq!(r.unwrap_err().status(), 403);
    assert_eq!(mock.token_calls.load(Ordering::SeqCst), 1);
    assert_eq!(mock.access_calls.load(Ordering::SeqCst), 1);
}
