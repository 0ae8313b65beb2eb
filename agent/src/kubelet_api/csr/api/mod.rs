//! The CertificateSigningRequest object: what the agent creates ([`object`]), what its
//! conditions mean ([`verdict`], pure), and the calls — create, then get and watch until the
//! request is decided — each under the API deadline.

use std::time::{Duration, SystemTime};

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::{
    ByteString,
    api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec},
};
use kube::{
    Api, ResourceExt as _,
    api::{ObjectMeta, PostParams, WatchParams},
};
use tokio::sync::watch;

/// The signer of kubelet serving certificates.
pub(crate) const SIGNER: &str = "kubernetes.io/kubelet-serving";

/// The usages requested. `key encipherment` is sent with the ECDSA key too: before Kubernetes
/// 1.25 the signer accepts only exactly these three for
/// `kubernetes.io/kubelet-serving` (later ones also accept the two without it, which kubelet
/// sends for non-RSA keys since 1.27).
pub(crate) const USAGES: [&str; 3] = ["digital signature", "key encipherment", "server auth"];

/// How long one watch of the request runs before it is renewed with a fresh get.
const WATCH_SECS: u32 = 240;

/// The serving certificate request named `name` carrying the PEM `request`.
pub(crate) fn object(name: &str, request: &str) -> CertificateSigningRequest {
    object_for(name, request, SIGNER, &USAGES)
}

/// The request named `name` carrying the PEM `request`, for `signer` with `usages`.
pub(crate) fn object_for(
    name: &str,
    request: &str,
    signer: &str,
    usages: &[&str],
) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request.as_bytes().to_vec()),
            signer_name: signer.into(),
            usages: Some(usages.iter().map(|u| (*u).to_owned()).collect()),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    }
}

/// Where a request stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Neither approved nor denied.
    Pending,
    /// Approved; the signer has not issued the certificate yet.
    Approved,
    /// Issued: the PEM certificate chain.
    Issued(Vec<u8>),
    /// Denied by an approver: reason and message.
    Denied(String),
    /// The signer failed it: reason and message.
    Failed(String),
}

impl Verdict {
    /// Closed name for logs and `doctor`.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Issued(_) => "issued",
            Self::Denied(_) => "denied",
            Self::Failed(_) => "failed",
        }
    }

    /// The decision, when the request is decided for good.
    pub(crate) fn into_final(self) -> Result<Final, Self> {
        match self {
            Self::Issued(c) => Ok(Final::Issued(c)),
            Self::Denied(w) => Ok(Final::Denied(w)),
            Self::Failed(w) => Ok(Final::Failed(w)),
            other => Err(other),
        }
    }
}

/// A decided request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Final {
    /// The PEM certificate chain.
    Issued(Vec<u8>),
    /// Denied: reason and message.
    Denied(String),
    /// Failed: reason and message.
    Failed(String),
}

/// PURE: the verdict of `csr`, in kubelet's order: Denied, then Failed, then a certificate.
pub(crate) fn verdict(csr: &CertificateSigningRequest) -> Verdict {
    let status = csr.status.as_ref();
    let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
    let find = |t: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == t && c.status != "False")
            .map(|c| {
                let reason = c.reason.as_deref().unwrap_or(t);
                match c.message.as_deref() {
                    Some(m) if !m.is_empty() => format!("{reason}: {m}"),
                    _ => reason.to_owned(),
                }
            })
    };
    if let Some(why) = find("Denied") {
        return Verdict::Denied(why);
    }
    if let Some(why) = find("Failed") {
        return Verdict::Failed(why);
    }
    match status.and_then(|s| s.certificate.as_ref()) {
        Some(c) if !c.0.is_empty() => Verdict::Issued(c.0.clone()),
        _ if find("Approved").is_some() => Verdict::Approved,
        _ => Verdict::Pending,
    }
}

/// A call about the request that failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// The API server refused or failed the call.
    #[error("{op} of certificate signing request {name} failed")]
    Api {
        /// `create`, `get` or `watch`.
        op: &'static str,
        /// The request's name.
        name: String,
        #[source]
        source: kube::Error,
    },
    /// No answer within the API deadline.
    #[error("{op} of certificate signing request {name} timed out")]
    Timeout {
        /// `create`, `get` or `watch`.
        op: &'static str,
        /// The request's name.
        name: String,
    },
    /// The agent is shutting down.
    #[error("cancelled by shutdown")]
    Cancelled,
}

async fn call<T>(
    op: &'static str,
    name: &str,
    timeout: Duration,
    fut: impl Future<Output = kube::Result<T>>,
) -> Result<T, CallError> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(source)) => Err(CallError::Api {
            op,
            name: name.into(),
            source,
        }),
        Err(_) => Err(CallError::Timeout {
            op,
            name: name.into(),
        }),
    }
}

/// Creates `csr`; one that already exists under its name (made by an earlier run with the
/// same key) counts as created.
///
/// # Errors
/// [`CallError`] for a refused or timed-out create.
pub(crate) async fn create(
    api: &Api<CertificateSigningRequest>,
    csr: &CertificateSigningRequest,
    timeout: Duration,
) -> Result<(), CallError> {
    let name = csr.name_any();
    match call(
        "create",
        &name,
        timeout,
        api.create(&PostParams::default(), csr),
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(CallError::Api {
            source: kube::Error::Api(s),
            ..
        }) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The current verdict of request `name`.
///
/// # Errors
/// [`CallError`] for a refused (404 included) or timed-out get.
pub(crate) async fn get(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    timeout: Duration,
) -> Result<Seen, CallError> {
    let csr = call("get", name, timeout, api.get(name)).await?;
    Ok(Seen {
        verdict: verdict(&csr),
        version: csr.resource_version().unwrap_or_default(),
        created: csr
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| SystemTime::from(t.0)),
    })
}

/// A request as one get read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Where it stands.
    pub verdict: Verdict,
    /// Its `resourceVersion`, to watch from.
    pub version: String,
    /// Its `creationTimestamp` (when it was first made: a restarted agent finds it again).
    pub created: Option<SystemTime>,
}

/// Waits until request `name` is issued, denied or failed: a get, then a watch from that
/// version until something changes, then a get again.
///
/// # Errors
/// [`CallError`] when a call fails (the caller retries) or on shutdown.
pub(crate) async fn wait_final(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    timeout: Duration,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Final, CallError> {
    loop {
        let Seen {
            verdict: v,
            version,
            ..
        } = get(api, name, timeout).await?;
        if let Ok(done) = v.into_final() {
            return Ok(done);
        }
        let params = WatchParams::default()
            .fields(&format!("metadata.name={name}"))
            .timeout(WATCH_SECS);
        let stream = call("watch", name, timeout, api.watch(&params, &version)).await?;
        let mut stream = stream.boxed();
        let changed = async {
            let whole = Duration::from_secs(u64::from(WATCH_SECS)) + timeout;
            tokio::time::timeout(whole, stream.try_next()).await
        };
        tokio::select! {
            r = changed => {
                if let Ok(Err(source)) = r {
                    return Err(CallError::Api { op: "watch", name: name.into(), source });
                }
            }
            _ = shutdown.wait_for(|s| *s) => return Err(CallError::Cancelled),
        }
    }
}

#[cfg(test)]
mod tests;
