//! The kubelet API's client CA: `--client-ca-file` when given, else the CA the agent's
//! kubeconfig names for its cluster (`certificate-authority` or `certificate-authority-data`).
//! Pure.
//!
//! The API server's kubelet client certificate (`--kubelet-client-certificate`) is usually
//! signed by the cluster CA, which is the CA the kubeconfig trusts the API server with, so the
//! default lets `kubectl logs` and `exec` authenticate without a setting of their own.

use std::path::{Path, PathBuf};

/// Where the kubelet API's client CA comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClientCa {
    /// `--client-ca-file`: a PEM bundle.
    File(PathBuf),
    /// The kubeconfig's cluster CA, as DER certificates (read when the agent starts).
    Kubeconfig(Vec<Vec<u8>>),
}

impl ClientCa {
    /// Where it comes from, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::File(path) => format!("--client-ca-file {}", path.display()),
            Self::Kubeconfig(_) => "the kubeconfig's cluster CA".to_owned(),
        }
    }
}

/// The client CA: the option when given, else the kubeconfig's CA certificates (DER, as kube
/// reads them from the file or the embedded data), else none (bearer tokens only).
pub(crate) fn client_ca(
    option: Option<&Path>,
    kubeconfig_ca: Option<&[Vec<u8>]>,
) -> Option<ClientCa> {
    match (option, kubeconfig_ca) {
        (Some(path), _) => Some(ClientCa::File(path.to_owned())),
        (None, Some(certs)) if !certs.is_empty() => Some(ClientCa::Kubeconfig(certs.to_vec())),
        (None, _) => None,
    }
}
