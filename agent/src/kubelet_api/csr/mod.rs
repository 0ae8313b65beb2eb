//! The kubelet API's serving certificate through the CSR API, used when no
//! `--tls-cert-file`/`--tls-private-key-file` are given: an ECDSA P-256 key made on the Mac
//! ([`request`]), a `certificates.k8s.io/v1` CertificateSigningRequest for signer
//! `kubernetes.io/kubelet-serving` ([`api`]), a wait for an operator's approval and the
//! signer's certificate, and the pair kept in `--cert-dir` ([`store`]) and served again after
//! a restart while it fits ([`issued`]). It is renewed at 70–90 % of its lifetime while the
//! old one keeps being served ([`Bootstrap`]); [`progress`] reads where it stands for `doctor`.
//!
//! Approval is left to the operator (`kubectl certificate approve`) or an approver of their
//! choice: kube-controller-manager does not approve kubelet serving requests. A denied or
//! failed request is reported (log and Node event) and asked again with a new key after a
//! backoff.

pub(crate) mod api;
mod bootstrap;
pub(crate) mod issued;
mod naming;
mod progress;
pub(crate) mod request;
pub(crate) mod store;

pub(crate) use self::{
    bootstrap::Bootstrap,
    naming::{rfc3339, sans_for},
    progress::{PENDING_TOO_LONG, Progress, progress},
};
