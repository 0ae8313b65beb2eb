//! What the purge speaks in: the things the agent creates on the Mac ([`Item`]), how each is
//! removed ([`Removal`]) and what the purge leaves ([`Kept`]).

use std::path::{Path, PathBuf};

/// Something the agent creates on the Mac, removed by the purge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item {
    /// `guest_dir`: one directory per VM with the files shared into its guest.
    GuestDirs,
    /// `vm_log_dir`: each VM's `tart run` log.
    VmLogs,
    /// `pod_log_dir`: the Pods' container logs.
    PodLogs,
    /// `cert_dir`: the kubelet API serving key and certificate obtained through the CSR API.
    CertDir,
    /// `tls_cert_file`: the kubelet API serving certificate given as a file.
    ServingCert,
    /// `tls_private_key_file`: its key.
    ServingKey,
    /// `log_file` and its rotated copies.
    AgentLog,
    /// launchd's StandardOutPath and StandardErrorPath.
    LaunchdLogs,
    /// `$TART_HOME/cache/OCIs`, only with `--purge-images`.
    ImageCache,
}

impl Item {
    /// The configuration key that names the path, for messages.
    pub(crate) fn setting(self) -> &'static str {
        match self {
            Self::GuestDirs => "guest_dir",
            Self::VmLogs => "vm_log_dir",
            Self::PodLogs => "pod_log_dir",
            Self::CertDir => "cert_dir",
            Self::ServingCert => "tls_cert_file",
            Self::ServingKey => "tls_private_key_file",
            Self::AgentLog => "log_file",
            Self::LaunchdLogs => "the launchd log directory",
            Self::ImageCache => "tart_home's OCI cache",
        }
    }

    /// What it holds, for the report.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::GuestDirs => "guest directories (Secret values)",
            Self::VmLogs => "VM logs",
            Self::PodLogs => "container logs",
            Self::CertDir => "kubelet API serving keys (cert_dir)",
            Self::ServingCert => "kubelet API serving certificate",
            Self::ServingKey => "kubelet API serving key",
            Self::AgentLog => "agent log",
            Self::LaunchdLogs => "launchd logs",
            Self::ImageCache => "OCI image cache",
        }
    }
}

/// How one path is removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Removal {
    /// The directory and everything in it.
    Dir(PathBuf),
    /// One file.
    File(PathBuf),
    /// A log file and its rotated copies `<file>.<n>`.
    RotatedFile(PathBuf),
    /// These files of a directory.
    FilesIn(PathBuf, &'static [&'static str]),
}

impl Removal {
    /// The path the configuration names.
    pub(crate) fn path(&self) -> &Path {
        match self {
            Self::Dir(p) | Self::File(p) | Self::RotatedFile(p) | Self::FilesIn(p, _) => p,
        }
    }
}

/// What the purge leaves, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// The configuration file: the package manager's, or the operator's.
    ConfigFile,
    /// The kubeconfig: the agent's cluster credentials; revoke them in the cluster.
    Kubeconfig,
    /// The client CA file: the cluster's public CA.
    ClientCa,
    /// The OCI cache, without `--purge-images`.
    ImageCache,
}

impl Kept {
    /// The report's words.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ConfigFile => "configuration file",
            Self::Kubeconfig => "kubeconfig (revoke its credentials in the cluster)",
            Self::ClientCa => "client CA file",
            Self::ImageCache => "OCI image cache (pass --purge-images to remove it)",
        }
    }
}
