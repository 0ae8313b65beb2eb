//! Pure: the configuration -> what `uninstall --purge` removes and what it keeps, and the
//! refusal of any configured path whose removal could take something that is not the agent's.

use std::path::{Component, Path, PathBuf};

use crate::config::Config;
use crate::images::golden::golden_hex;
use crate::vm_name::VmNaming;

use super::super::super::plist::{STDERR_LOG, STDOUT_LOG};

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

/// What the purge is given.
#[derive(Debug, Clone)]
pub(crate) struct PurgeInput<'a> {
    /// The configuration the agent ran with.
    pub cfg: &'a Config,
    /// The home its defaults were resolved against.
    pub home: &'a Path,
    /// The configuration file, if one was loaded.
    pub config_file: Option<&'a Path>,
    /// launchd's log directory.
    pub launchd_log_dir: &'a Path,
    /// `--purge-images`.
    pub images: bool,
}

/// The purge, decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PurgePlan {
    /// Local VMs of this scheme (Pod VMs and goldens) are stopped and deleted.
    pub naming: VmNaming,
    /// Paths removed, in order.
    pub remove: Vec<(Item, Removal)>,
    /// Directories removed afterwards only if empty (the default `~/.tart-kubelet`).
    pub tidy: Vec<PathBuf>,
    /// Paths left in place.
    pub keep: Vec<(Kept, PathBuf)>,
}

/// Why nothing was purged: every configured path that could not be removed safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refusing to purge, nothing was removed: {}", .0.join("; "))]
pub(crate) struct Refused(pub Vec<String>);

/// Directories shared with other software, under the home and absolute.
const SHARED_IN_HOME: &[&str] = &[
    "Library",
    "Library/Logs",
    "Library/Caches",
    "Library/Application Support",
    "Library/LaunchAgents",
    "Library/Preferences",
    "Documents",
    "Desktop",
    "Downloads",
    ".kube",
    ".ssh",
    ".config",
    ".cache",
    ".local",
];
const SHARED: &[&str] = &[
    "/usr/local",
    "/usr/local/etc",
    "/usr/local/var",
    "/usr/local/var/log",
    "/opt/homebrew",
    "/opt/homebrew/etc",
    "/opt/homebrew/var",
    "/opt/homebrew/var/log",
    "/private/etc",
    "/private/tmp",
    "/private/var",
    "/var/log",
    "/var/tmp",
    "/Library/Logs",
    "/Library/Caches",
    "/Library/LaunchAgents",
    "/Library/LaunchDaemons",
    "/Library/Application Support",
    "/System/Volumes",
    "/System/Volumes/Data",
    "/Users/Shared",
];

/// Whether a local VM is one the agent created: a Pod VM (`<prefix><pod uid>`) or a golden
/// base (`<prefix>golden-<digest hex>`).
pub(crate) fn is_agents_vm(naming: &VmNaming, vm: &str) -> bool {
    naming.pod_uid(vm).is_some() || golden_hex(naming.prefix(), vm).is_some()
}

/// Decides the purge.
///
/// # Errors
/// [`Refused`] naming each path that is relative or has `..`, and each directory to remove
/// whole that is `/` or a top-level directory, `$HOME` or contains it, contains `TART_HOME`
/// (VMs the agent did not create) or a file the purge keeps, or is shared with other software.
pub(crate) fn plan(input: &PurgeInput<'_>) -> Result<PurgePlan, Refused> {
    let cfg = input.cfg;
    let mut remove = vec![
        (Item::GuestDirs, Removal::Dir(cfg.guest_dir.clone())),
        (Item::VmLogs, Removal::Dir(cfg.vm_log_dir.clone())),
        (Item::PodLogs, Removal::Dir(cfg.pod_log_dir.clone())),
        (Item::CertDir, Removal::Dir(cfg.cert_dir.clone())),
    ];
    if let Some(f) = &cfg.tls_cert_file {
        remove.push((Item::ServingCert, Removal::File(f.clone())));
    }
    if let Some(f) = &cfg.tls_private_key_file {
        remove.push((Item::ServingKey, Removal::File(f.clone())));
    }
    if let Some(f) = &cfg.log_file {
        remove.push((Item::AgentLog, Removal::RotatedFile(f.clone())));
    }
    remove.push((
        Item::LaunchdLogs,
        Removal::FilesIn(
            input.launchd_log_dir.to_path_buf(),
            &[STDOUT_LOG, STDERR_LOG],
        ),
    ));
    let cache = cfg.tart_home.join("cache/OCIs");
    let mut keep = vec![];
    if input.images {
        remove.push((Item::ImageCache, Removal::Dir(cache)));
    } else {
        keep.push((Kept::ImageCache, cache));
    }
    if let Some(f) = input.config_file {
        keep.push((Kept::ConfigFile, f.to_path_buf()));
    }
    if let Some(f) = &cfg.kubeconfig {
        keep.push((Kept::Kubeconfig, f.clone()));
    }
    if let Some(f) = &cfg.client_ca_file {
        keep.push((Kept::ClientCa, f.clone()));
    }

    let mut problems = vec![];
    for (item, r) in &remove {
        if let Some(why) = refusal(*item, r, input.home, &cfg.tart_home, &keep) {
            problems.push(format!("{} {} {why}", item.setting(), r.path().display()));
        }
    }
    if !problems.is_empty() {
        return Err(Refused(problems));
    }
    // Emptied parents go too: the default `~/.tart-kubelet`, and launchd's log directory
    // when it is one the purge could have removed whole.
    let agent_dir = input.home.join(".tart-kubelet");
    let mut tidy = vec![];
    if dir_refusal(
        input.launchd_log_dir,
        input.home,
        Some(&cfg.tart_home),
        &keep,
    )
    .is_none()
    {
        tidy.push(input.launchd_log_dir.to_path_buf());
    }
    if remove
        .iter()
        .any(|(_, r)| r.path().parent() == Some(&agent_dir))
    {
        tidy.push(agent_dir);
    }
    Ok(PurgePlan {
        naming: cfg.vm_naming.clone(),
        remove,
        tidy,
        keep,
    })
}

/// Why `r` must not be removed, if it must not.
fn refusal(
    item: Item,
    r: &Removal,
    home: &Path,
    tart_home: &Path,
    keep: &[(Kept, PathBuf)],
) -> Option<String> {
    let p = r.path();
    if !p.is_absolute() {
        return Some("is not an absolute path".into());
    }
    if p.components()
        .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
    {
        return Some("has `.` or `..` components".into());
    }
    match r {
        // The cache lives inside TART_HOME by definition.
        Removal::Dir(_) if item == Item::ImageCache => dir_refusal(p, home, None, keep),
        Removal::Dir(_) => dir_refusal(p, home, Some(tart_home), keep),
        // Named files only; a directory among them fails to be removed as a file.
        Removal::File(_) | Removal::RotatedFile(_) | Removal::FilesIn(..) => None,
    }
}

/// Why the directory `p` must not be removed with all it holds, if it must not.
fn dir_refusal(
    p: &Path,
    home: &Path,
    tart_home: Option<&Path>,
    keep: &[(Kept, PathBuf)],
) -> Option<String> {
    if p.components().count() < 3 {
        return Some("is `/` or a top-level directory".into());
    }
    if home.starts_with(p) {
        return Some(format!("is $HOME ({}) or contains it", home.display()));
    }
    if let Some(t) = tart_home.filter(|t| t.starts_with(p)) {
        return Some(format!(
            "is TART_HOME ({}) or contains it: it holds VMs the agent did not create",
            t.display()
        ));
    }
    let shared = SHARED.iter().map(PathBuf::from);
    if shared
        .chain(SHARED_IN_HOME.iter().map(|s| home.join(s)))
        .any(|s| s == p)
    {
        return Some("is a directory shared with other software".into());
    }
    keep.iter()
        .find(|(_, f)| f.starts_with(p))
        .map(|(k, f)| format!("holds the {} {}", k.as_str(), f.display()))
}

/// The `--dry-run` text of a purge.
pub(crate) fn render(plan: &PurgePlan, tart_home: &Path) -> String {
    use std::fmt::Write as _;
    let prefix = plan.naming.prefix();
    let mut s = format!(
        "purge:\n- stop, then delete, every local VM named {prefix}<pod uid> or \
         {prefix}golden-<digest hex> in TART_HOME {}\n",
        tart_home.display()
    );
    for (item, r) in &plan.remove {
        let _ = match r {
            Removal::Dir(p) => writeln!(s, "- rm -rf {} ({})", p.display(), item.as_str()),
            Removal::File(p) => writeln!(s, "- rm -f {} ({})", p.display(), item.as_str()),
            Removal::RotatedFile(p) => {
                writeln!(s, "- rm -f {0} {0}.<n> ({1})", p.display(), item.as_str())
            }
            Removal::FilesIn(d, names) => {
                let files: Vec<String> = names
                    .iter()
                    .map(|n| d.join(n).display().to_string())
                    .collect();
                writeln!(s, "- rm -f {} ({})", files.join(" "), item.as_str())
            }
        };
    }
    for d in &plan.tidy {
        let _ = writeln!(s, "- rmdir {} if empty", d.display());
    }
    for (k, p) in &plan.keep {
        let _ = writeln!(s, "- keep {} ({})", p.display(), k.as_str());
    }
    s
}
