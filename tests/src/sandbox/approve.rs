//! The sandbox's operator act: approving its agents' kubelet serving certificate requests
//! (signer `kubernetes.io/kubelet-serving`) through the `/approval` subresource, as
//! `kubectl certificate approve` does — get the request, add an `Approved` condition, put it
//! back. Only requests named after one of the sandbox's own Nodes are approved; the
//! controller-manager's csrsigning controller then issues the certificate.

use std::time::Duration;

use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use kube::{
    Api, Client,
    api::{ListParams, PostParams},
};

use crate::cluster;

/// Deadline of each API call.
const CALL: Duration = Duration::from_secs(10);

const SIGNER: &str = "kubernetes.io/kubelet-serving";

/// Whether `csr` is one of `nodes`' serving requests (agents name them `<node>.serving-<key>`).
fn ours(csr: &CertificateSigningRequest, nodes: &[String]) -> bool {
    let name = csr.metadata.name.as_deref().unwrap_or_default();
    csr.spec.signer_name == SIGNER
        && nodes
            .iter()
            .any(|n| name.starts_with(&format!("{n}.serving-")))
}

fn decided(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Approved" || c.type_ == "Denied")
        })
}

fn issued(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .is_some_and(|c| !c.0.is_empty())
}

/// Approves every undecided serving request of `nodes`; returns whether each node has an
/// issued certificate.
async fn approve_round(
    api: &Api<CertificateSigningRequest>,
    nodes: &[String],
) -> anyhow::Result<bool> {
    let list = tokio::time::timeout(CALL, api.list(&ListParams::default())).await??;
    let mine: Vec<_> = list.items.into_iter().filter(|c| ours(c, nodes)).collect();
    for mut csr in mine.iter().filter(|c| !decided(c)).cloned() {
        let name = csr.metadata.name.clone().unwrap_or_default();
        let status = csr
            .status
            .get_or_insert_with(CertificateSigningRequestStatus::default);
        status
            .conditions
            .get_or_insert_default()
            .push(CertificateSigningRequestCondition {
                type_: "Approved".into(),
                status: "True".into(),
                reason: Some("SandboxApprove".into()),
                message: Some("approved by the sandbox for its own simulated Mac".into()),
                ..CertificateSigningRequestCondition::default()
            });
        tokio::time::timeout(
            CALL,
            api.replace_subresource("approval", &name, &PostParams::default(), &csr),
        )
        .await??;
    }
    Ok(nodes.iter().all(|n| {
        mine.iter().any(|c| {
            issued(c)
                && c.metadata
                    .name
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with(&format!("{n}."))
        })
    }))
}

/// Approves `nodes`' serving requests as they appear, until each node's certificate is
/// issued or `within` passes.
///
/// # Errors
/// When some node has no issued certificate by then.
pub async fn approve_until_issued(
    admin: &Client,
    nodes: &[String],
    within: Duration,
) -> anyhow::Result<()> {
    let api: Api<CertificateSigningRequest> = Api::all(admin.clone());
    cluster::wait_for(within, || async {
        approve_round(&api, nodes).await.ok().filter(|done| *done)
    })
    .await
    .map(drop)
    .map_err(|e| anyhow::anyhow!("serving certificates not issued: {e}"))
}
