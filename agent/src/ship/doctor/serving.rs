//! Doctor's verdict on the kubelet API (pure): its serving certificate — from files, or where
//! the request through the CSR API stands — and its client CA.

use super::checks::{Check, Status};
use crate::{
    config::ClientCa,
    kubelet_api::csr::{PENDING_TOO_LONG, Progress, api::Verdict, rfc3339},
};

/// How the kubelet API gets its serving certificate, as `doctor` found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Serving {
    /// `--tls-cert-file`/`--tls-private-key-file`: whether they and the client CA load.
    Files(Result<(), String>),
    /// Through the CSR API (no certificate files): what the certificate directory and the API
    /// server say.
    Requested(Progress),
}

/// Verdict on the kubelet API's serving certificate and client CA.
pub(super) fn kubelet_api_check(
    port: u16,
    serving: &Serving,
    client_ca: Option<&ClientCa>,
) -> Check {
    const NAME: &str = "kubelet-api";
    let serves = match serving {
        Serving::Files(Err(e)) => {
            return Check::new(NAME, Status::Fail, format!("cannot serve: {e}"))
                .fix("give a readable PEM certificate and its matching key (docs/kubelet-api.md)");
        }
        Serving::Files(Ok(())) => format!("serves HTTPS on port {port}"),
        Serving::Requested(p) => match requested_check(port, p) {
            Ok(serves) => serves,
            Err(check) => return check,
        },
    };
    match client_ca {
        Some(ca) => Check::new(
            NAME,
            Status::Ok,
            format!("{serves}; client certificates verified against {}", ca.describe()),
        ),
        None => Check::new(
            NAME,
            Status::Warn,
            format!("{serves}, but with no --client-ca-file and no CA in the kubeconfig the API server's kubelet client certificate is refused (401)"),
        )
        .fix("pass --client-ca-file with the CA of the API server's --kubelet-client-certificate"),
    }
}

/// What "serves" means with a requested certificate, or the check that says why it does not.
fn requested_check(port: u16, p: &Progress) -> Result<String, Check> {
    const NAME: &str = "kubelet-api";
    let list = "kubectl get csr --field-selector spec.signerName=kubernetes.io/kubelet-serving";
    let (status, message, fix) = match p {
        Progress::Issued {
            not_after,
            expired: false,
        } => {
            return Ok(format!(
                "serves HTTPS on port {port} with a certificate from the CSR API, valid until {}",
                rfc3339(*not_after)
            ));
        }
        Progress::Issued {
            not_after,
            expired: true,
        } => (
            Status::Warn,
            format!(
                "the serving certificate from the CSR API expired at {}; the agent requests a new one",
                rfc3339(*not_after)
            ),
            format!(
                "approve the agent's new request: {list}, then kubectl certificate approve <name>"
            ),
        ),
        Progress::None => (
            Status::Warn,
            format!(
                "no serving certificate yet: without --tls-cert-file the agent requests one through the CSR API (signer kubernetes.io/kubelet-serving) and serves port {port} once it is issued"
            ),
            format!(
                "start the agent, then approve its request: {list}, then kubectl certificate approve <name> (docs/kubelet-api.md)"
            ),
        ),
        Progress::Requested {
            csr,
            verdict,
            pending_for,
            serving_until,
        } => {
            // A renewal keeps serving the stored certificate while its request waits.
            let meanwhile = serving_until
                .map(|end| {
                    format!(
                        "; the current certificate (valid until {}) is served meanwhile",
                        rfc3339(end)
                    )
                })
                .unwrap_or_default();
            match verdict {
            Ok(Verdict::Pending) => match pending_for.filter(|d| *d >= PENDING_TOO_LONG) {
                // Pending this long: no approver took it and no operator has acted.
                Some(d) => (
                    if serving_until.is_some() { Status::Warn } else { Status::Fail },
                    format!(
                        "serving certificate request {csr} has been pending approval for {} min: no operator or approver has approved it{}",
                        d.as_secs() / 60,
                        match serving_until {
                            Some(_) => meanwhile.clone(),
                            None => "; the kubelet API is not served until it is issued".to_owned(),
                        }
                    ),
                    format!("kubectl certificate approve {csr}, or run an approver for kubelet serving requests (docs/install.md#serving-certificate)"),
                ),
                None => (
                    Status::Warn,
                    match serving_until {
                        Some(_) => format!("serving certificate request {csr} is pending approval{meanwhile}"),
                        None => format!("serving certificate request {csr} is pending approval: the kubelet API is not served until it is issued"),
                    },
                    format!("kubectl certificate approve {csr}"),
                ),
            },
            Ok(Verdict::Approved) => (
                Status::Warn,
                format!("serving certificate request {csr} is approved but not issued yet{meanwhile}"),
                "run kube-controller-manager with the csrsigning controller and --cluster-signing-cert-file/--cluster-signing-key-file (the CA the API server trusts as --kubelet-certificate-authority)".to_owned(),
            ),
            Ok(Verdict::Issued(_)) => (
                Status::Ok,
                format!("serving certificate request {csr} is issued; the running agent serves port {port} with it"),
                String::new(),
            ),
            Ok(v @ (Verdict::Denied(why) | Verdict::Failed(why))) => (
                Status::Fail,
                format!(
                    "serving certificate request {csr} {} ({why}){meanwhile}; the agent asks again with a new key",
                    match v {
                        Verdict::Denied(_) => "was denied",
                        _ => "failed",
                    }
                ),
                format!("see why (kubectl describe csr {csr}), then approve the agent's next request"),
            ),
            Err(e) => (
                Status::Warn,
                format!("serving certificate request {csr} is waiting; its status was not checked ({e}){meanwhile}"),
                format!("kubectl get csr {csr}"),
            ),
        }
        }
    };
    let check = Check::new(NAME, status, message);
    Err(if fix.is_empty() {
        check
    } else {
        check.fix(fix)
    })
}
