//! Carries out a [`PurgePlan`]: the agent's VMs through the `tart` driver (stopped, then
//! deleted), then its paths; prints one line per thing removed, found absent or kept.

use std::io::ErrorKind;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tart::{Source, Tart, VmName};

use super::model::Removal;
use super::plan::{PurgePlan, is_agents_vm};
use crate::config::Config;

/// Grace a leftover VM gets to shut its guest down before it is stopped hard. The Pods were
/// drained first (docs/operations.md, "Decommissioning a Mac"), so what is left is stranded.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// The tart driver for the purge: the configuration's program and `TART_HOME`, the driver's
/// default deadlines and retries.
fn driver(cfg: &Config) -> tart::TartCli {
    tart::TartCli::builder(&cfg.tart_home)
        .program(&cfg.tart_program)
        .no_auto_prune(true)
        .build()
}

/// Removes everything in `plan`.
///
/// # Errors
/// When `tart list` fails or a VM cannot be stopped or deleted: the paths are then left as
/// they are (a VM may still use its guest directory), and a rerun finishes the job. When a
/// path cannot be removed.
pub(crate) async fn purge(plan: &PurgePlan, cfg: &Config) -> anyhow::Result<()> {
    remove_vms(&driver(cfg), plan, cfg).await?;
    for (item, r) in &plan.remove {
        let removed = remove(r)
            .await
            .with_context(|| format!("cannot remove {} {}", item.as_str(), r.path().display()))?;
        let verb = if removed { "removed" } else { "absent " };
        println!("{verb} {}: {}", item.as_str(), r.path().display());
    }
    for dir in &plan.tidy {
        // Only an empty directory goes; anything else in it is not the agent's.
        if tokio::fs::remove_dir(dir).await.is_ok() {
            println!("removed empty directory {}", dir.display());
        }
    }
    for (kept, path) in &plan.keep {
        println!("kept    {}: {}", kept.as_str(), path.display());
    }
    Ok(())
}

async fn remove_vms<T: Tart>(tart: &T, plan: &PurgePlan, cfg: &Config) -> anyhow::Result<()> {
    let vms = tart
        .list()
        .await
        .context("cannot list the VMs (tart list); nothing was removed")?;
    let (mut ours, others): (Vec<_>, Vec<_>) = vms
        .into_iter()
        .filter(|v| v.source == Source::Local)
        .map(|v| v.name)
        .partition(|n| is_agents_vm(&plan.naming, n));
    // Pod VMs before the goldens they were cloned from.
    ours.sort_by_key(|n| plan.naming.pod_uid(n).is_none());
    for name in ours {
        let vm = VmName::new(name.as_str()).map_err(anyhow::Error::msg)?;
        let opts = tart::RunOpts {
            dirs: vec![],
            network: tart::Network::Shared,
            root_disk: Default::default(),
            suspendable: false,
            log_path: cfg.vm_log_dir.join(format!("{vm}.log")),
            log_cap_bytes: u64::MAX,
            start_window: Duration::ZERO,
        };
        let running = tart
            .attach(&vm, &opts)
            .await
            .with_context(|| format!("cannot tell whether VM {vm} runs"))?;
        if let Some(p) = &running {
            tart.stop(p, STOP_GRACE)
                .await
                .with_context(|| format!("cannot stop VM {vm}"))?;
        }
        tart.delete(&vm)
            .await
            .with_context(|| format!("cannot delete VM {vm}"))?;
        let how = if running.is_some() {
            " (stopped first)"
        } else {
            ""
        };
        println!("removed VM {vm}{how}");
    }
    if !others.is_empty() {
        println!(
            "kept    {} local VM(s) not named by this agent (prefix {:?}): {}",
            others.len(),
            plan.naming.prefix(),
            others.join(", ")
        );
    }
    Ok(())
}

/// Removes one path; `false` when nothing was there.
async fn remove(r: &Removal) -> anyhow::Result<bool> {
    match r {
        Removal::Dir(p) => absent_ok(tokio::fs::remove_dir_all(p).await),
        Removal::File(p) => absent_ok(tokio::fs::remove_file(p).await),
        Removal::RotatedFile(p) => {
            let mut any = absent_ok(tokio::fs::remove_file(p).await)?;
            for rotated in rotated_copies(p).await? {
                any |= absent_ok(tokio::fs::remove_file(&rotated).await)?;
            }
            Ok(any)
        }
        Removal::FilesIn(dir, names) => {
            let mut any = false;
            for n in *names {
                any |= absent_ok(tokio::fs::remove_file(dir.join(n)).await)?;
            }
            Ok(any)
        }
    }
}

/// `<file>.<n>` beside `file`: the agent's log rotation (docs/logging.md).
async fn rotated_copies(file: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else {
        bail!("{} names no file", file.display());
    };
    let prefix = format!("{}.", name.to_string_lossy());
    let mut out = vec![];
    let mut entries = match tokio::fs::read_dir(dir).await {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e.into()),
    };
    while let Some(e) = entries.next_entry().await? {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.strip_prefix(&prefix)
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
        {
            out.push(e.path());
        }
    }
    Ok(out)
}

fn absent_ok(r: std::io::Result<()>) -> anyhow::Result<bool> {
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}
