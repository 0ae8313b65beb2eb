//! The agent's own client credentials under `--identity node`: kubelet's TLS bootstrap and
//! the client certificate's renewal.
//!
//! With `--bootstrap-kubeconfig`, an agent whose `--kubeconfig` is missing or names a client
//! certificate that is not valid now requests one through the CSR API with the bootstrap
//! token ([`bootstrap`]): a new ECDSA P-256 key made on the Mac (it never leaves it), signer
//! `kubernetes.io/kube-apiserver-client-kubelet`, subject `CN=system:node:<node>,
//! O=system:nodes` ([`request`]); once the cluster's approver (or an operator) approves it
//! and the signer issues it, the pair goes to `<cert-dir>/kubelet-client-current.pem` and
//! `--kubeconfig` is written pointing at it ([`kubeconfig`]). Whether a certificate may be
//! used and when it is renewed are pure decisions ([`lifetime`]); the running agent renews
//! it at 70–90 % of its life and hands the new one to its clients ([`Rotation`]); its expiry
//! is a metric ([`metrics`]).
//!
//! The CSR machinery (key, PKCS#10 DER, calls, certificate directory) is the kubelet API's
//! serving certificate's ([`crate::kubelet_api::csr`]); this folder adds what differs for
//! a client certificate.

mod bootstrap;
pub(crate) mod kubeconfig;
pub(crate) mod lifetime;
pub(crate) mod metrics;
mod obtain;
pub(crate) mod request;
mod rotate;

pub(crate) use self::{
    bootstrap::{BootstrapError, ensure_client_certificate},
    rotate::Rotation,
};
