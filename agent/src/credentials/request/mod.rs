//! PURE: the agent's client certificate request as kubelet files it — a PKCS#10 request with
//! subject `O=system:nodes, CN=system:node:<node>` and no subjectAltNames, signer
//! `kubernetes.io/kube-apiserver-client-kubelet`, kubelet's usages — its name, and the words
//! an operator reads while it waits. The DER, the key and the calls are the serving
//! certificate's ([`crate::kubelet_api::csr`]).

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;

use crate::kubelet_api::csr::{
    api,
    request::{self, KeyError, Sans, ServingKey},
};

/// The signer of kubelet client certificates.
pub(crate) const SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";

/// The usages requested. `key encipherment` is sent with the ECDSA key too: before Kubernetes
/// 1.27 the API server and the approver accept exactly these three for this signer (later
/// ones also accept the two without it, which kubelet sends for non-RSA keys since 1.27).
pub(crate) const USAGES: [&str; 3] = ["digital signature", "key encipherment", "client auth"];

/// The name of the request made with the key of fingerprint `fingerprint`: the same key asks
/// under the same name, so an agent restarted while waiting finds its request again.
pub(crate) fn request_name(node: &str, fingerprint: &str) -> String {
    crate::api::event_name(node, &format!("client-{fingerprint}"))
}

/// The request for `node`'s client certificate, signed by `key`, named after the key.
///
/// # Errors
/// [`KeyError::Sign`] when signing fails.
pub(crate) fn object(key: &ServingKey, node: &str) -> Result<CertificateSigningRequest, KeyError> {
    let der = request::build(key, node, &Sans::default())?;
    let pem = request::pem("CERTIFICATE REQUEST", &der);
    Ok(api::object_for(
        &request_name(node, &key.fingerprint()),
        &pem,
        SIGNER,
        &USAGES,
    ))
}

/// What the agent logs while request `csr` waits, and what an operator does about it.
pub(crate) fn waiting_message(csr: &str) -> String {
    format!(
        "waiting for approval of CSR {csr}: the cluster's approver (kube-controller-manager's csrapproving controller) approves it when the bootstrap token's group may create certificatesigningrequests/nodeclient (or, for a renewal, system:nodes may create certificatesigningrequests/selfnodeclient); otherwise approve it by hand: kubectl certificate approve {csr}"
    )
}

#[cfg(test)]
mod tests;
