//! The types the guest modules share: what was fetched for a Pod ([`Sources`]), what the
//! downward API can read ([`DownwardContext`]), the resolved environment, the planned volumes,
//! the control share's content, and the one error type ([`ConfigError`]) that makes a container
//! wait `CreateContainerConfigError`. Pure data; no I/O.

use std::collections::BTreeMap;

/// The two kinds of object a Pod's env and volumes read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum ObjectKind {
    /// A core/v1 Secret.
    Secret,
    /// A core/v1 ConfigMap.
    ConfigMap,
}

impl ObjectKind {
    /// The word kubelet uses in its messages (`secret "x" not found`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Secret => "secret",
            Self::ConfigMap => "configmap",
        }
    }

    /// The kind as Kubernetes spells it (`Secret`, `ConfigMap`).
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Self::Secret => "Secret",
            Self::ConfigMap => "ConfigMap",
        }
    }
}

/// One object's keys and values: a Secret's `data`, or a ConfigMap's `data` (UTF-8) merged with
/// its `binaryData`.
pub(crate) type ObjectData = BTreeMap<String, Vec<u8>>;

/// What the agent fetched for one Pod, by kind and name in the Pod's namespace. `None`: the
/// object does not exist (404). A name absent from the map was not fetched at all, which the
/// resolvers treat as missing too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Sources {
    /// Fetched objects.
    pub objects: BTreeMap<(ObjectKind, String), Option<ObjectData>>,
}

impl Sources {
    /// The object, when it exists.
    pub(crate) fn get(&self, kind: ObjectKind, name: &str) -> Option<&ObjectData> {
        self.objects
            .get(&(kind, name.to_owned()))
            .and_then(Option::as_ref)
    }

    /// Record a fetched object (`None`: not found).
    pub(crate) fn insert(&mut self, kind: ObjectKind, name: &str, data: Option<ObjectData>) {
        self.objects.insert((kind, name.to_owned()), data);
    }
}

/// What the downward API can read besides the Pod object itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DownwardContext {
    /// `spec.nodeName` as this agent knows it.
    pub node_name: String,
    /// `status.hostIP`: the Mac's InternalIP.
    pub host_ip: String,
    /// `status.podIP`: the VM's IP, unknown (`None`) before the VM has booted.
    pub pod_ip: Option<String>,
    /// Node allocatable CPU in millicores: what `resourceFieldRef` reads for `limits.cpu` when
    /// the container sets no limit (kubelet's rule).
    pub node_cpu_millis: u64,
    /// Node allocatable memory in bytes (the same rule for `limits.memory`).
    pub node_memory_bytes: u64,
    /// Node allocatable ephemeral storage in bytes.
    pub node_ephemeral_bytes: u64,
}

/// Why a container cannot be configured yet: it waits `CreateContainerConfigError` with
/// [`ConfigError::message`], a Warning event says the same, and the agent retries with backoff
/// (a missing object may appear). Messages are kubelet's words where kubelet has them and never
/// contain a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConfigError {
    /// A required Secret or ConfigMap does not exist.
    #[error("{} \"{name}\" not found", kind.as_str())]
    MissingObject {
        /// Secret or ConfigMap.
        kind: ObjectKind,
        name: String,
    },
    /// A required key is not in the object.
    #[error("couldn't find key {key} in {} {namespace}/{name}", kind.kind())]
    MissingKey {
        /// Secret or ConfigMap.
        kind: ObjectKind,
        /// The Pod's namespace.
        namespace: String,
        /// The object's name.
        name: String,
        key: String,
    },
    /// A `fieldRef` or `resourceFieldRef` the agent cannot resolve (unsupported path, bad
    /// divisor).
    #[error("{0}")]
    InvalidReference(String),
    /// An environment value holds a NUL byte, which no process environment can carry.
    #[error("environment variable {name} contains a NUL byte; mount the value as a file instead")]
    NulInEnv {
        /// The variable's name.
        name: String,
    },
    /// A volume file path that would leave its volume (`..`, absolute) or collides.
    #[error("invalid path {path:?} in volume {volume:?}: {why}")]
    InvalidPath {
        volume: String,
        /// The path as given.
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The service-account token could not be issued.
    #[error("cannot issue a service-account token for {service_account:?}: {why}")]
    Token {
        service_account: String,
        /// What the API server said (never the token).
        why: String,
    },
    /// Writing the Pod's files on the host failed.
    #[error("cannot write the guest's files: {0}")]
    Io(String),
    /// Reading a Secret or ConfigMap failed for another reason than its absence (forbidden,
    /// timeout, API server unreachable).
    #[error("cannot get {} \"{name}\": {why}", kind.as_str())]
    Fetch {
        /// Secret or ConfigMap.
        kind: ObjectKind,
        name: String,
        /// The API error's kind and status (never a value).
        why: String,
    },
}

impl ConfigError {
    /// Closed metric label (every value is in `pods::metrics::GUEST_CONFIG_ERROR_KINDS`).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::MissingObject { .. } => "missing_object",
            Self::MissingKey { .. } => "missing_key",
            Self::InvalidReference(_) => "invalid_reference",
            Self::NulInEnv { .. } => "nul_in_env",
            Self::InvalidPath { .. } => "invalid_path",
            Self::Token { .. } => "token",
            Self::Io(_) => "io",
            Self::Fetch { .. } => "fetch",
        }
    }
}

/// The container's environment after kubelet's resolution: each name once, in kubelet's order
/// (first definition's position, last definition's value), values as bytes (a Secret's value
/// need not be UTF-8).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResolvedEnv {
    /// `(name, value)` pairs.
    pub vars: Vec<(String, Vec<u8>)>,
    /// `envFrom` keys skipped because they are not valid variable names, per source, for
    /// kubelet's `InvalidEnvironmentVariableNames` Warning.
    pub invalid_keys: Vec<InvalidKeys>,
}

/// Keys of one `envFrom` source that are not valid environment variable names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidKeys {
    /// Secret or ConfigMap.
    pub kind: ObjectKind,
    /// The Pod's namespace.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// The skipped keys (with the prefix applied), sorted.
    pub keys: Vec<String>,
}

/// Where a volume file's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileData {
    /// Known now (Secret, ConfigMap, downward API).
    Bytes(Vec<u8>),
    /// A projected `serviceAccountToken`: issued by a TokenRequest when written.
    Token(TokenSpec),
}

/// A projected `serviceAccountToken` source.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TokenSpec {
    /// `audience`; `None`: the API server's own audiences.
    pub audience: Option<String>,
    /// `expirationSeconds` (default 3600, at least 600).
    pub expiration_seconds: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VolumeFile {
    /// Relative path inside the volume, checked: no `..` component, not absolute, not empty.
    pub path: String,
    /// Its content.
    pub data: FileData,
    /// Its mode (`items[].mode`, else `defaultMode`, else 0644).
    pub mode: u32,
}

/// What a volume holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum VolumeContent {
    /// Files the agent writes and keeps current (`secret`, `configMap`, `downwardAPI`,
    /// `projected`), read-only in the guest.
    Files(Vec<VolumeFile>),
    /// An empty directory the guest may write (`emptyDir`).
    EmptyDir,
}

/// One Pod volume, as the agent materializes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlannedVolume {
    /// The volume's name in the Pod.
    pub name: String,
    /// Its share name (`vol-<index>`): no `:`, `,` or `/`, never `control` or `status`.
    pub share: String,
    /// What it holds.
    pub content: VolumeContent,
    /// Which Secrets/ConfigMaps it reads, so a refresher knows when to rebuild it.
    pub reads: Vec<(ObjectKind, String)>,
}

/// One `volumeMount` of the container, as the launcher links it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountSpec {
    /// The share holding the volume.
    pub share: String,
    /// `mountPath` (absolute).
    pub path: String,
    /// `subPath` inside the share (relative), after `$(VAR)` expansion for `subPathExpr`.
    pub sub: Option<String>,
}

/// The job's stdin (`stdin`, `stdinOnce`): what `control/stdin` says (docs/guest.md, "Stdin").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum GuestStdin {
    /// `/dev/null` (no `stdin: true`); the file is absent.
    #[default]
    Null,
    /// A FIFO that stays open between attaches (`stdin: true`).
    Open,
    /// A FIFO closed when the first attach ends (`stdin: true`, `stdinOnce: true`).
    Once,
}

impl GuestStdin {
    /// PURE: the mode of a container's `stdin` and `stdinOnce`.
    pub(crate) fn of(stdin: Option<bool>, stdin_once: Option<bool>) -> Self {
        match (stdin.unwrap_or(false), stdin_once.unwrap_or(false)) {
            (false, _) => Self::Null,
            (true, false) => Self::Open,
            (true, true) => Self::Once,
        }
    }

    /// The file's content; `None`: no file.
    pub(crate) fn as_str(self) -> Option<&'static str> {
        match self {
            Self::Null => None,
            Self::Open => Some("open"),
            Self::Once => Some("once"),
        }
    }
}

/// What the control share says (docs/guest.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ControlSpec {
    /// The resolved environment.
    pub env: Vec<(String, Vec<u8>)>,
    /// `command` after `$(VAR)` expansion; empty: the image's own entry.
    pub command: Vec<String>,
    /// `args` after expansion.
    pub args: Vec<String>,
    /// `workingDir`.
    pub workdir: Option<String>,
    /// `securityContext.runAsUser` as a numeric UID.
    pub user: Option<String>,
    pub mounts: Vec<MountSpec>,
    /// `terminationMessagePath` (a guest path; the launcher copies the file's first 4 KiB into
    /// the status share when the command ends).
    pub termination_message_path: Option<String>,
    /// The job's stdin.
    pub stdin: GuestStdin,
}
