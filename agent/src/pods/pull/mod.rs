//! Image pulls: single-flight per image and credentials, and registry credentials from `imagePullSecrets`.
//!
//! Two Pods that need the same image with the same credentials at once share one `tart pull`
//! (Tart serialises pulls per registry host anyway, docs/reference/tart-cli.md §5, and a second
//! pull would only wait on its lock). Pods with other credentials — or none — get a pull of their
//! own: one namespace's secret must never authorise another namespace's pull, nor its failure be
//! blamed on it. Credentials come from the Pod's `kubernetes.io/dockerconfigjson` secrets, matched
//! by registry host, and go to tart only through `TART_REGISTRY_*` (never argv, never logs:
//! `tart::Credentials` redacts its password in `Debug`).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use futures::{FutureExt, future::Shared};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use serde_json::Value;
use tart::{Credentials, ErrorKind, Tart};

/// A failed pull, cloneable so every waiter of a shared pull gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PullFailure {
    /// Classification.
    pub kind: ErrorKind,
    /// tart's message.
    pub message: String,
}

type PullFuture = Shared<futures::future::BoxFuture<'static, Result<(), PullFailure>>>;

/// What makes two pulls the same pull: the image and the credentials it is pulled with.
type PullKey = (String, Option<Credentials>);

/// In-flight pulls by image and credentials.
#[derive(Clone, Default)]
pub(crate) struct Pulls {
    inflight: Arc<Mutex<HashMap<PullKey, PullFuture>>>,
}

impl Pulls {
    /// Pull `image`, joining a pull of the same image with the same credentials already in
    /// flight. The pull runs in its own task, so a waiter that goes away (Pod deleted) does not
    /// kill it for the others.
    pub(crate) async fn pull<T: Tart>(
        &self,
        tart: Arc<T>,
        image: &str,
        creds: Option<Credentials>,
    ) -> Result<(), PullFailure> {
        let key: PullKey = (image.to_owned(), creds.clone());
        let fut = {
            let mut map = self
                .inflight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            map.entry(key.clone())
                .or_insert_with(|| {
                    let image = image.to_owned();
                    let task = tokio::spawn(async move {
                        tart.pull(&image, creds.as_ref())
                            .await
                            .map_err(|e| PullFailure {
                                kind: e.kind(),
                                message: e.message.clone(),
                            })
                    });
                    async move {
                        task.await.unwrap_or_else(|e| {
                            Err(PullFailure {
                                kind: ErrorKind::Other,
                                message: format!("pull task failed: {e}"),
                            })
                        })
                    }
                    .boxed()
                    .shared()
                })
                .clone()
        };
        let res = fut.clone().await;
        let mut map = self
            .inflight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Only remove the entry if it is still this pull (a later one may have replaced it).
        if map.get(&key).is_some_and(|f| f.ptr_eq(&fut)) {
            map.remove(&key);
        }
        res
    }
}

/// Credentials for `host` from the named dockerconfigjson secrets, first match wins.
/// Secrets that are missing, unreadable or malformed are skipped (tart then falls back to the
/// host's own credential store, docs/reference/tart-cli.md §1.2).
pub(crate) async fn credentials_for(
    secrets: &Api<Secret>,
    names: &[String],
    host: &str,
    timeout: std::time::Duration,
) -> Option<Credentials> {
    for name in names {
        let s = match tokio::time::timeout(timeout, secrets.get_opt(name)).await {
            Ok(Ok(Some(s))) => s,
            Ok(Ok(None)) => continue,
            Ok(Err(error)) => {
                tracing::warn!(%error, secret = %name, "cannot read image pull secret");
                continue;
            }
            Err(_) => {
                tracing::warn!(secret = %name, "reading image pull secret timed out");
                continue;
            }
        };
        let raw = s
            .data
            .as_ref()
            .and_then(|d| d.get(".dockerconfigjson"))
            .map(|b| b.0.clone());
        if let Some(c) = raw.and_then(|r| from_dockerconfig(&r, host)) {
            return Some(c);
        }
    }
    None
}

/// Parse a `.dockerconfigjson` and pick the entry for `host` (`auths` keys may carry a scheme
/// or a path: `https://ghcr.io/v1/`).
pub(crate) fn from_dockerconfig(json: &[u8], host: &str) -> Option<Credentials> {
    let v: Value = serde_json::from_slice(json).ok()?;
    let auths = v.get("auths")?.as_object()?;
    let entry = auths.iter().find_map(|(k, e)| {
        let k = k
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        let k = k.split('/').next().unwrap_or(k);
        (k == host).then_some(e)
    })?;
    let (username, password) = match (
        entry.get("username").and_then(Value::as_str),
        entry.get("password").and_then(Value::as_str),
    ) {
        (Some(u), Some(p)) => (u.to_owned(), p.to_owned()),
        _ => {
            let decoded = base64_decode(entry.get("auth")?.as_str()?)?;
            let text = String::from_utf8(decoded).ok()?;
            let (u, p) = text.split_once(':')?;
            (u.to_owned(), p.to_owned())
        }
    };
    Some(Credentials {
        username,
        password,
        hostname: Some(host.to_owned()),
    })
}

/// Standard base64 (with or without padding).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = s.bytes().filter(|b| *b != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            acc |= val(*c)? << (18 - 6 * i);
        }
        let n = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => return None,
        };
        for i in 0..n {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
