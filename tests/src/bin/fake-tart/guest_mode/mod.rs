//! fake-tart as the guest (knob `guest_launcher`): `run` starts the real
//! `packaging/guest/tart-guest-launcher` against its `--dir` shares, as the guest's
//! LaunchDaemon would at boot. The guest's filesystem root is `<vm dir>/guest`, where
//! `Volumes/My Shared Files/<name>` are symlinks to the shares' host paths; the launcher finds
//! it through `TART_GUEST_ROOT` and runs in the VM's directory.
//!
//! The launcher lives in the process group of a reaper (`sh` blocked reading a pipe only this
//! `run` process holds): however `run` ends — return, SIGKILL, a killed process group — the
//! pipe closes and the reaper SIGKILLs the whole group, the way a VM's power-off ends
//! everything in it.

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, ChildStdin, Command};

use crate::dirs::{AUTOMOUNT_TAG, Share};

/// The guest launcher's own stdout and stderr, in the VM's directory (a real guest's launchd
/// log, which the host never sees).
pub(crate) const CONSOLE_LOG: &str = "guest-console.log";

/// The launcher shipped in this repository.
pub(crate) fn launcher_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/guest/tart-guest-launcher")
}

/// Its LaunchDaemon plist.
pub(crate) fn plist_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../packaging/guest/dev.tart-kubelet.guest-launcher.plist")
}

/// What the guest's disk keeps from one run to the next (what an image or a delivery
/// installed); the rest of the guest root is laid out afresh at each boot.
const KEPT: [&str; 2] = ["Library", "usr"];

/// How long the launcher waits for its shares; they exist before it starts, so this only
/// bounds a test whose share is missing on purpose.
const SHARE_TIMEOUT_SECS: &str = "30";

/// The guest's vitals interval: short, so tests see samples quickly.
const VITALS_INTERVAL_SECS: &str = "1";

/// The running guest: dropping it (or the process exiting) ends the reaper's pipe.
pub(crate) struct Guest {
    pub launcher: Child,
    _reaper: Child,
    _lifeline: ChildStdin,
}

/// Lays out `<vm dir>/guest` for `shares` (at boot).
pub(crate) fn boot(vm_dir: &Path, shares: &[Share]) -> io::Result<()> {
    layout(&vm_dir.join("guest"), shares)
}

/// Starts `launcher` (a file of this repository, or the one installed in the guest root)
/// against the laid-out guest root, with the macOS tool stand-ins ([`crate::guest_tools`])
/// first on its `PATH`.
pub(crate) fn start(home: &Path, vm_dir: &Path, vm: &str, launcher: &Path) -> io::Result<Guest> {
    let root = vm_dir.join("guest");
    let tools = crate::guest_tools::install(home, vm_dir, vm)?;
    let path = match std::env::var_os("PATH") {
        Some(p) => {
            let mut dirs = vec![tools];
            dirs.extend(std::env::split_paths(&p));
            std::env::join_paths(dirs).map_err(io::Error::other)?
        }
        None => tools.into_os_string(),
    };
    let mut reaper = Command::new("/bin/sh")
        .args(["-c", "cat >/dev/null; kill -KILL 0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let lifeline = reaper
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("reaper has no stdin"))?;
    let group = reaper
        .id()
        .ok_or_else(|| io::Error::other("reaper exited at once"))?;
    // The launcher's own output goes where a real guest's launchd job writes it, inside the
    // guest, never to `tart run`'s output: the agent keeps that as the VM's log and shows it
    // in `kubectl logs` (prefixed `[tart]`), beside the job's lines it reads from the status
    // share, so passing it through would show every job line twice.
    let console = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(vm_dir.join(CONSOLE_LOG))?;
    let launcher = Command::new("/bin/sh")
        .arg(launcher)
        .stdout(console.try_clone()?)
        .stderr(console)
        .current_dir(vm_dir)
        .env("TART_GUEST_ROOT", &root)
        .env("TART_GUEST_ON_EXIT", "exit")
        .env("TART_GUEST_SHARE_TIMEOUT", SHARE_TIMEOUT_SECS)
        .env("TART_GUEST_VITALS_INTERVAL", VITALS_INTERVAL_SECS)
        .env("PATH", path)
        .stdin(Stdio::null())
        .process_group(i32::try_from(group).map_err(io::Error::other)?)
        .spawn()?;
    Ok(Guest {
        launcher,
        _reaper: reaper,
        _lifeline: lifeline,
    })
}

/// `<root>/Volumes/My Shared Files/<name>` -> host path for every automounted share; a single
/// unnamed automounted share is the `My Shared Files` directory itself. Shares under another
/// tag are not automounted on macOS guests (docs/reference/tart-cli.md §2.6), so they get no link.
fn layout(root: &Path, shares: &[Share]) -> io::Result<()> {
    if root.exists() {
        for e in fs::read_dir(root)? {
            let e = e?;
            if KEPT.iter().any(|k| e.file_name() == *k) {
                continue;
            }
            if e.file_type()?.is_dir() {
                fs::remove_dir_all(e.path())?;
            } else {
                fs::remove_file(e.path())?;
            }
        }
    }
    let volumes = root.join("Volumes");
    fs::create_dir_all(&volumes)?;
    let mount = volumes.join("My Shared Files");
    let auto: Vec<&Share> = shares.iter().filter(|s| s.tag == AUTOMOUNT_TAG).collect();
    match auto.as_slice() {
        [] => fs::create_dir(&mount),
        [
            Share {
                name: None, path, ..
            },
        ] => symlink(path, &mount),
        many => {
            fs::create_dir(&mount)?;
            for s in many {
                if let Some(name) = &s.name {
                    symlink(&s.path, mount.join(name))?;
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
