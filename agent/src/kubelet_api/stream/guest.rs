//! The seam between a streaming request and the guest: [`ExecSource`] finds the running VM
//! of `namespace/pod/container` (with kubelet's answer when there is none) and starts a
//! command in it, and finds a running Pod's IP for port-forward. The Pod side implements it
//! (`pods/served/exec.rs`).

use std::net::IpAddr;

use futures::future::BoxFuture;
use tart::{ExecOpts, ExecSession, VmName};

/// The container an exec request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExecTarget {
    pub namespace: String,
    pub pod: String,
    /// Pod UID, when the path carries one (it narrows the lookup to that instance).
    pub uid: Option<String>,
    pub container: String,
}

impl ExecTarget {
    pub(crate) fn new(namespace: &str, pod: &str, uid: Option<&str>, container: &str) -> Self {
        Self {
            namespace: namespace.into(),
            pod: pod.into(),
            uid: uid.map(str::to_owned),
            container: container.into(),
        }
    }
}

/// Why there is nothing to exec into, in kubelet's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExecError {
    /// No such Pod on this node.
    #[error("pod does not exist")]
    PodNotFound,
    /// The Pod has no container of that name.
    #[error("container not found ({0:?})")]
    ContainerNotFound(String),
    /// The container's VM is not running (the Pod is pending, finished, or restarting).
    #[error("container not found ({container:?}): pod {pod:?} is not running (phase {phase})")]
    NotRunning {
        container: String,
        pod: String,
        /// The Pod's phase.
        phase: String,
    },
}

impl ExecError {
    /// The HTTP status of the answer (before any upgrade): 404 as kubelet's logs answer an
    /// unknown Pod or container, 400 for a VM that is not running (kubelet's exec says 500
    /// for both, which kubectl shows as an internal error).
    pub(crate) fn status(&self) -> u16 {
        match self {
            Self::PodNotFound | Self::ContainerNotFound(_) => 404,
            Self::NotRunning { .. } => 400,
        }
    }
}

/// Finds a container's running VM and starts commands in it.
pub(crate) trait ExecSource: Send + Sync + 'static {
    /// The running VM behind `target`.
    ///
    /// # Errors
    /// [`ExecError`] when the Pod is not on this node, has no such container, or is not
    /// running.
    fn running_vm(&self, target: &ExecTarget) -> Result<VmName, ExecError>;

    /// The IP of the running Pod `namespace/pod` (and `uid`, when given), for port-forward.
    ///
    /// # Errors
    /// [`ExecError`] when the Pod is not on this node or not running with an IP.
    fn guest_ip(&self, namespace: &str, pod: &str, uid: Option<&str>) -> Result<IpAddr, ExecError>;

    /// Starts `argv` in `vm` (`tart exec`); dropping the session kills the command.
    fn start(
        &self,
        vm: VmName,
        argv: Vec<String>,
        opts: ExecOpts,
    ) -> BoxFuture<'static, tart::Result<ExecSession>>;
}
