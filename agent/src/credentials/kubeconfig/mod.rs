//! The agent's kubeconfig under the TLS bootstrap: which client certificate a kubeconfig
//! names ([`client_certificate`]), the kubeconfig written after a bootstrap ([`render`], pure:
//! kubelet's layout — the bootstrap kubeconfig's server and CA, and the certificate and key
//! by path to the pair in the certificate directory, so a renewal rewrites that file only) and
//! its writing (0600, by rename).

use std::path::{Path, PathBuf};

use base64::Engine as _;
use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};

use super::lifetime::Validity;
use crate::kubelet_api::csr::{issued, request::pem, store::write_private};

/// Where a kubeconfig's current user keeps its client certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CertSource {
    /// `client-certificate-data`: the PEM.
    Data(Vec<u8>),
    /// `client-certificate`: a file (made absolute against the kubeconfig's directory).
    File(PathBuf),
    /// None: token, exec or no user.
    None,
}

/// PURE: the client certificate of `kc`'s current context's user; relative paths are taken
/// from `dir`, the kubeconfig's directory (kubectl's rule).
pub(crate) fn client_certificate(kc: &Kubeconfig, dir: &Path) -> CertSource {
    let user = kc
        .current_context
        .as_deref()
        .and_then(|cur| kc.contexts.iter().find(|c| c.name == cur))
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.as_deref());
    let auth = user
        .and_then(|u| kc.auth_infos.iter().find(|a| a.name == u))
        .and_then(|a| a.auth_info.as_ref());
    auth.map_or(CertSource::None, |a| source_of(a, dir))
}

/// PURE: where `auth` keeps its client certificate; relative paths are taken from `dir`.
pub(crate) fn source_of(auth: &AuthInfo, dir: &Path) -> CertSource {
    if let Some(data) = auth.client_certificate_data.as_deref() {
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_or(CertSource::None, CertSource::Data);
    }
    match auth.client_certificate.as_deref() {
        Some(p) => CertSource::File(dir.join(p)),
        None => CertSource::None,
    }
}

/// PURE: the validity of the first certificate in `pem`; `None` when there is none.
pub(crate) fn validity_of_pem(pem: &[u8]) -> Option<Validity> {
    use rustls::pki_types::{CertificateDer, pem::PemObject as _};
    let der = CertificateDer::pem_slice_iter(pem).next()?.ok()?;
    let leaf = issued::leaf(&der)?;
    Some(Validity {
        not_before: leaf.not_before,
        not_after: leaf.not_after,
    })
}

/// Why a kubeconfig's client certificate could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// The kubeconfig file is absent.
    #[error("kubeconfig {0} does not exist")]
    NoKubeconfig(PathBuf),
    /// The kubeconfig does not parse.
    #[error("kubeconfig {path} cannot be read")]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// Its user has no client certificate (a token or exec user).
    #[error("kubeconfig {0} names no client certificate")]
    NoCertificate(PathBuf),
    /// The certificate file is absent or unreadable.
    #[error("client certificate {path} cannot be read")]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The PEM holds no X.509 certificate.
    #[error("client certificate of kubeconfig {0} is not a PEM X.509 certificate")]
    NotACertificate(PathBuf),
}

/// The validity of the client certificate a loaded client configuration authenticates with;
/// `None` without one (a token or exec user) or when it cannot be read.
pub(crate) fn validity_of_config(cfg: &kube::Config) -> Option<Validity> {
    let pem = match source_of(&cfg.auth_info, Path::new(".")) {
        CertSource::None => return None,
        CertSource::Data(d) => d,
        CertSource::File(f) => std::fs::read(f).ok()?,
    };
    validity_of_pem(&pem)
}

/// The validity of the client certificate kubeconfig `path` names.
///
/// # Errors
/// [`ReadError`] naming what is missing or unreadable.
pub(crate) fn read_validity(path: &Path) -> Result<Validity, ReadError> {
    if !path.exists() {
        return Err(ReadError::NoKubeconfig(path.to_owned()));
    }
    let kc = Kubeconfig::read_from(path).map_err(|source| ReadError::Kubeconfig {
        path: path.to_owned(),
        source,
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let pem = match client_certificate(&kc, dir) {
        CertSource::None => return Err(ReadError::NoCertificate(path.to_owned())),
        CertSource::Data(d) => d,
        CertSource::File(f) => {
            std::fs::read(&f).map_err(|source| ReadError::File { path: f, source })?
        }
    };
    validity_of_pem(&pem).ok_or_else(|| ReadError::NotACertificate(path.to_owned()))
}

/// The cluster a bootstrap kubeconfig points at, as the written kubeconfig repeats it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusterFacts {
    /// API server URL.
    pub server: String,
    /// CA certificates (DER) the server is verified with; empty: the system's.
    pub ca: Vec<Vec<u8>>,
    /// `insecure-skip-tls-verify`.
    pub insecure: bool,
    /// `tls-server-name`.
    pub tls_server_name: Option<String>,
}

impl ClusterFacts {
    /// The facts of a loaded client configuration.
    pub(crate) fn of(cfg: &kube::Config) -> Self {
        Self {
            server: cfg.cluster_url.to_string().trim_end_matches('/').to_owned(),
            ca: cfg.root_cert.clone().unwrap_or_default(),
            insecure: cfg.accept_invalid_certs,
            tls_server_name: cfg.tls_server_name.clone(),
        }
    }
}

/// PURE: kubelet's kubeconfig after a bootstrap: `cluster`, with the CA embedded, and a user
/// whose certificate and key are both the pair file `pair`.
pub(crate) fn render(cluster: &ClusterFacts, pair: &Path) -> Kubeconfig {
    let ca: String = cluster.ca.iter().map(|c| pem("CERTIFICATE", c)).collect();
    let pair = pair.display().to_string();
    Kubeconfig {
        clusters: vec![NamedCluster {
            name: "default-cluster".into(),
            cluster: Some(Cluster {
                server: Some(cluster.server.clone()),
                insecure_skip_tls_verify: cluster.insecure.then_some(true),
                certificate_authority_data: (!ca.is_empty())
                    .then(|| base64::engine::general_purpose::STANDARD.encode(ca)),
                tls_server_name: cluster.tls_server_name.clone(),
                ..Cluster::default()
            }),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: "default-auth".into(),
            auth_info: Some(AuthInfo {
                client_certificate: Some(pair.clone()),
                client_key: Some(pair),
                ..AuthInfo::default()
            }),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: "default-context".into(),
            context: Some(Context {
                cluster: "default-cluster".into(),
                user: Some("default-auth".into()),
                namespace: Some("default".into()),
                ..Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some("default-context".into()),
        kind: Some("Config".into()),
        api_version: Some("v1".into()),
        ..Kubeconfig::default()
    }
}

/// Writes `kc` to `path` (JSON, which every kubeconfig reader takes as YAML), mode 0600, by
/// rename; creates the directory.
///
/// # Errors
/// When the directory or the file cannot be written.
pub(crate) fn write(path: &Path, kc: &Kubeconfig) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(kc).map_err(std::io::Error::other)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    write_private(path, &text)
}

#[cfg(test)]
mod tests;
