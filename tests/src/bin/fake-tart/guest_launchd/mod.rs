//! The guest's privilege step and launchd, as far as delivering the guest launcher needs them
//! (docs/fake-tart.md, "Kinds of image"): `sudo` and `launchctl` stand-ins, first on the `PATH`
//! of every `exec` command, and the `run` side that starts a LaunchDaemon bootstrapped into the
//! system domain.
//!
//! The exec user is modelled by the environment (`USER=admin`, as the real guest agent runs
//! commands as the logged-in `admin`); `sudo -n` makes it `root` unless the VM knob
//! `sudo_password` says the image's sudo asks for a password. `launchctl bootstrap system
//! <plist>` and `bootout system/<label>` need `root` and leave a request in `<vm dir>/launchd/
//! <label>`; `run` polls it ([`take_request`]) and starts or stops the launcher in the VM's
//! process group, so the launcher outlives the `exec` that started it, as a LaunchDaemon
//! outlives its `launchctl`.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::Failure;
use crate::guest_tools::GUEST_TOOL;
use crate::home::Home;

/// The launcher's LaunchDaemon label (`packaging/guest/`).
pub(crate) const LABEL: &str = "dev.tart-kubelet.guest-launcher";

/// Where an image keeps the launcher's plist and the launcher, under the guest root.
pub(crate) const PLIST: &str = "Library/LaunchDaemons/dev.tart-kubelet.guest-launcher.plist";
pub(crate) const LAUNCHER: &str = "usr/local/libexec/tart-guest/tart-guest-launcher";

/// The requests and states a label's file holds.
const LOAD: &str = "load";
const LOADED: &str = "loaded";
const UNLOAD: &str = "unload";

/// What `run` is asked to do with the launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// Start it (`bootstrap`).
    Load,
    /// Stop it (`bootout`).
    Unload,
}

fn state_file(vm_dir: &Path, label: &str) -> PathBuf {
    vm_dir.join("launchd").join(label)
}

fn state(vm_dir: &Path, label: &str) -> Option<String> {
    fs::read_to_string(state_file(vm_dir, label)).ok()
}

fn set_state(vm_dir: &Path, label: &str, word: &str) -> io::Result<()> {
    let f = state_file(vm_dir, label);
    fs::create_dir_all(f.parent().expect("has a parent"))?;
    fs::write(f, word)
}

/// The launcher runs (launchd started it at boot, or `run` did on request).
pub(crate) fn mark_loaded(vm_dir: &Path) -> io::Result<()> {
    set_state(vm_dir, LABEL, LOADED)
}

/// Nothing is loaded (a fresh boot of an image without the launcher).
pub(crate) fn clear(vm_dir: &Path) {
    let _ = fs::remove_file(state_file(vm_dir, LABEL));
}

/// A pending request for the launcher's label, taken: a load becomes `loaded`, an unload
/// clears the label.
pub(crate) fn take_request(vm_dir: &Path) -> Option<Request> {
    match state(vm_dir, LABEL)?.as_str() {
        LOAD => {
            let _ = mark_loaded(vm_dir);
            Some(Request::Load)
        }
        UNLOAD => {
            clear(vm_dir);
            Some(Request::Unload)
        }
        _ => None,
    }
}

/// Writes the `sudo` and `launchctl` stand-ins into `bin` (the VM's `guest-bin`).
pub(crate) fn install(home: &Path, bin: &Path, vm: &str) -> io::Result<()> {
    fs::create_dir_all(bin)?;
    let exe = std::env::current_exe()?;
    let (home, exe) = (home.display(), exe.display());
    let sudo = format!(
        "#!/bin/sh\n[ \"$1\" = -n ] && shift\nTART_HOME='{home}' '{exe}' {GUEST_TOOL} '{vm}' sudo || exit 1\nUSER=root LOGNAME=root exec \"$@\"\n"
    );
    let launchctl = format!(
        "#!/bin/sh\nTART_HOME='{home}' exec '{exe}' {GUEST_TOOL} '{vm}' launchctl \"$@\"\n"
    );
    for (name, script) in [("sudo", sudo), ("launchctl", launchctl)] {
        let path = bin.join(name);
        fs::write(&path, script)?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// `__fake-tart-guest-tool <vm> sudo`: may the exec user become root without a password?
pub(crate) fn sudo(home: &Home, vm: &str) -> Result<(), Failure> {
    let knobs = crate::rules::load(home)?;
    if knobs.vm(vm).sudo_password.unwrap_or(false) {
        eprintln!("sudo: a password is required");
        return Err(Failure::Exit(1));
    }
    Ok(())
}

/// `__fake-tart-guest-tool <vm> launchctl <args…>`, run as `user`.
pub(crate) fn launchctl(home: &Home, vm: &str, args: &[String], user: &str) -> Result<(), Failure> {
    let vm_dir = home.vm_dir(vm);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (verb, result) = match args.as_slice() {
        ["bootstrap", "system", plist] => ("Bootstrap", bootstrap(&vm_dir, plist, user)),
        ["bootout", target] => ("Boot-out", bootout(&vm_dir, target, user)),
        _ => {
            eprintln!("Unrecognized subcommand: {}", args.join(" "));
            return Err(Failure::Exit(64));
        }
    };
    result.map_err(|(code, text)| {
        eprintln!("{verb} failed: {code}: {text}");
        Failure::Exit(code)
    })
}

type Refusal = (i32, &'static str);

fn bootstrap(vm_dir: &Path, plist: &str, user: &str) -> Result<(), Refusal> {
    if user != "root" {
        return Err((1, "Operation not permitted"));
    }
    let path = Path::new(plist);
    if !path.is_file() {
        return Err((2, "No such file or directory"));
    }
    let label = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or((22, "Invalid argument"))?;
    if matches!(state(vm_dir, label).as_deref(), Some(LOAD | LOADED)) {
        return Err((5, "Input/output error"));
    }
    set_state(vm_dir, label, LOAD).map_err(|_| (5, "Input/output error"))
}

fn bootout(vm_dir: &Path, target: &str, user: &str) -> Result<(), Refusal> {
    if user != "root" {
        return Err((1, "Operation not permitted"));
    }
    let label = target
        .strip_prefix("system/")
        .ok_or((22, "Invalid argument"))?;
    if !matches!(state(vm_dir, label).as_deref(), Some(LOAD | LOADED)) {
        return Err((3, "No such process"));
    }
    set_state(vm_dir, label, UNLOAD).map_err(|_| (5, "Input/output error"))
}

/// Lays the launcher and its plist into `root` (an image with the launcher baked in).
pub(crate) fn bake(root: &Path, launcher: &Path, plist: &Path) -> io::Result<()> {
    for (from, to) in [(launcher, LAUNCHER), (plist, PLIST)] {
        let to = root.join(to);
        fs::create_dir_all(to.parent().expect("has a parent"))?;
        fs::copy(from, to)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
