//! Pure: the configuration -> what `uninstall --purge` removes and what it keeps, and the
//! refusal of any configured path whose removal could take something that is not the agent's.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::images::golden::golden_hex;
use crate::vm_name::VmNaming;

use super::model::{Item, Kept, Removal};
use super::refusal::{dir_refusal, refusal};
use crate::ship::plist::{STDERR_LOG, STDOUT_LOG};

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
