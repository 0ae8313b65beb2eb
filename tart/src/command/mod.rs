//! Argv builders: one pure function per `tart` subcommand (docs/reference/tart-cli.md §2).
//!
//! Every value from a Pod (image names, share paths, exec argv) becomes exactly one argv entry:
//! there is never a shell between a Pod field and `tart`. Values that `tart`'s argument parser
//! would misread (a leading `-`, a `:` inside a `--dir` path) are rejected here with an
//! [`ArgError`] instead. Running the command is the `process` module's job.

use std::{
    ffi::{OsStr, OsString},
    os::unix::ffi::OsStrExt,
    time::Duration,
};

use crate::{DirShare, IpResolver, Network, PruneOpts, RootDiskOpts, RunOpts, SetOpts, VmName};

/// A value that cannot be passed to `tart` safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ArgError {
    /// An image or source name that is empty, starts with `-` or contains a control character.
    #[error("invalid image reference {0:?}")]
    InvalidImage(String),
    /// A `--dir` share whose path, name or tag would be misparsed by `tart`
    /// (docs/reference/tart-cli.md §2.6).
    #[error("invalid --dir share: {0}")]
    InvalidDirShare(String),
}

/// `tart --version`.
pub(crate) fn version() -> Vec<OsString> {
    argv(["--version"])
}

/// `tart list --format json`.
pub(crate) fn list() -> Vec<OsString> {
    argv(["list", "--format", "json"])
}

/// `tart get <vm> --format json`.
pub(crate) fn get(vm: &VmName) -> Vec<OsString> {
    argv(["get", vm.as_str(), "--format", "json"])
}

/// `tart pull <image>`. Credentials go through the environment, never argv
/// (docs/reference/tart-cli.md §1.2).
///
/// # Errors
/// [`ArgError::InvalidImage`] when `image` could be read as a flag.
pub(crate) fn pull(image: &str) -> Result<Vec<OsString>, ArgError> {
    check_image(image)?;
    Ok(argv(["pull", image]))
}

/// `tart clone <source> <vm>`. `source` is a local VM name or a remote image.
///
/// # Errors
/// [`ArgError::InvalidImage`] when `source` could be read as a flag.
pub(crate) fn clone(source: &str, vm: &VmName) -> Result<Vec<OsString>, ArgError> {
    check_image(source)?;
    Ok(argv(["clone", source, vm.as_str()]))
}

/// `tart set <vm> [--cpu N] [--memory MiB] [--disk-size GB] [--random-mac] [--random-serial]`.
pub(crate) fn set(vm: &VmName, opts: &SetOpts) -> Vec<OsString> {
    let mut v = argv(["set", vm.as_str()]);
    if let Some(cpu) = opts.cpu {
        v.extend(argv(["--cpu", &cpu.to_string()]));
    }
    if let Some(mem) = opts.memory_mib {
        v.extend(argv(["--memory", &mem.to_string()]));
    }
    if let Some(disk) = opts.disk_size_gb {
        v.extend(argv(["--disk-size", &disk.to_string()]));
    }
    if opts.random_mac {
        v.push("--random-mac".into());
    }
    if opts.random_serial {
        v.push("--random-serial".into());
    }
    v
}

/// `tart run <vm> --no-graphics [--dir ...]... [network flags] [--root-disk-opts=...]
/// [--suspendable]`.
///
/// # Errors
/// [`ArgError::InvalidDirShare`] for a share `tart` would misparse.
pub(crate) fn run(vm: &VmName, opts: &RunOpts) -> Result<Vec<OsString>, ArgError> {
    let mut v = argv(["run", vm.as_str(), "--no-graphics"]);
    for share in &opts.dirs {
        v.push("--dir".into());
        v.push(dir_spec(share)?);
    }
    match &opts.network {
        Network::Shared => {}
        Network::Softnet {
            allow,
            block,
            expose,
        } => {
            v.push("--net-softnet".into());
            for (flag, list) in [("allow", allow), ("block", block), ("expose", expose)] {
                if !list.is_empty() {
                    v.push(format!("--net-softnet-{flag}={}", list.join(",")).into());
                }
            }
        }
        Network::Bridged(iface) => v.push(format!("--net-bridged={iface}").into()),
        Network::Host => v.push("--net-host".into()),
    }
    if let Some(disk) = root_disk_opts(opts.root_disk) {
        v.push(format!("--root-disk-opts={disk}").into());
    }
    if opts.suspendable {
        v.push("--suspendable".into());
    }
    Ok(v)
}

/// The `--root-disk-opts` value, `sync=<mode>,caching=<mode>` with the unset ones left out;
/// `None` when both are unset (docs/reference/tart-cli.md §2.6).
fn root_disk_opts(d: RootDiskOpts) -> Option<String> {
    let parts: Vec<String> = [
        d.sync.map(|s| format!("sync={}", s.as_str())),
        d.caching.map(|c| format!("caching={}", c.as_str())),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| parts.join(","))
}

/// The `--dir` value: `[name:]path[:options]` where options are `ro` and `tag=TAG`,
/// comma-separated, in the last `:` segment (docs/reference/tart-cli.md §2.6).
pub(crate) fn dir_spec(share: &DirShare) -> Result<OsString, ArgError> {
    let path = share.path.as_os_str();
    if path.is_empty() {
        return Err(ArgError::InvalidDirShare("empty path".into()));
    }
    // `:` separates name, path and options; a path containing one would be split
    // (docs/reference/tart-cli.md §2.6).
    if path.as_bytes().contains(&b':') {
        return Err(ArgError::InvalidDirShare(format!(
            "path {} contains ':'",
            share.path.display()
        )));
    }
    let mut out = OsString::new();
    if let Some(name) = &share.name {
        if name.is_empty() || name.contains([':', ',', '/']) {
            return Err(ArgError::InvalidDirShare(format!(
                "bad share name {name:?}"
            )));
        }
        out.push(name);
        out.push(":");
    }
    out.push(path);
    let mut options = Vec::new();
    if share.read_only {
        options.push("ro".to_owned());
    }
    if let Some(tag) = &share.tag {
        if tag.is_empty() || tag.contains([':', ',', '=']) {
            return Err(ArgError::InvalidDirShare(format!("bad tag {tag:?}")));
        }
        options.push(format!("tag={tag}"));
    }
    if !options.is_empty() {
        out.push(":");
        out.push(options.join(","));
    }
    Ok(out)
}

/// `tart stop <vm> --timeout <secs>` (`--timeout 0`: SIGINT then SIGKILL at once,
/// docs/reference/tart-cli.md §2.7).
pub(crate) fn stop(vm: &VmName, timeout: Duration) -> Vec<OsString> {
    argv([
        "stop",
        vm.as_str(),
        "--timeout",
        &timeout.as_secs().to_string(),
    ])
}

/// `tart delete <vm>`.
pub(crate) fn delete(vm: &VmName) -> Vec<OsString> {
    argv(["delete", vm.as_str()])
}

/// `tart delete <remote name>`: one OCI cache entry, a tag or a digest
/// (docs/reference/tart-cli.md §2.9).
///
/// # Errors
/// [`ArgError::InvalidImage`] when `image` is not a remote name (it could be a local VM's).
pub(crate) fn delete_image(image: &str) -> Result<Vec<OsString>, ArgError> {
    check_image(image)?;
    if !is_remote(image) {
        return Err(ArgError::InvalidImage(image.to_owned()));
    }
    Ok(argv(["delete", image]))
}

/// `tart ip <vm> --wait <secs> --resolver <r>`. `--wait` is a UInt16 in Tart, so it is capped
/// at 65535 s (docs/reference/tart-cli.md §2.11).
pub(crate) fn ip(vm: &VmName, wait: Duration, resolver: IpResolver) -> Vec<OsString> {
    let wait = wait.as_secs().min(u64::from(u16::MAX));
    argv([
        "ip",
        vm.as_str(),
        "--wait",
        &wait.to_string(),
        "--resolver",
        resolver.as_str(),
    ])
}

/// `tart exec <vm> <argv...>`: flags must precede the name and everything after it is passed
/// through verbatim, so no `--` (it would reach the guest as the first word,
/// docs/reference/tart-cli.md §2.10).
pub(crate) fn exec(vm: &VmName, command: &[String]) -> Vec<OsString> {
    let mut v = argv(["exec", vm.as_str()]);
    v.extend(command.iter().map(OsString::from));
    v
}

/// `tart exec [-i] [-t] <vm> <argv...>` for a streaming exec: the flags precede the name, as
/// Tart requires (docs/reference/tart-cli.md §2.10).
pub(crate) fn exec_streaming(
    vm: &VmName,
    command: &[String],
    interactive: bool,
    tty: bool,
) -> Vec<OsString> {
    let mut v = argv(["exec"]);
    if interactive {
        v.push("-i".into());
    }
    if tty {
        v.push("-t".into());
    }
    v.push(vm.as_str().into());
    v.extend(command.iter().map(OsString::from));
    v
}

/// `tart prune --entries caches|vms [--older-than DAYS] [--space-budget GB]`.
pub(crate) fn prune(opts: &PruneOpts) -> Vec<OsString> {
    let entries = if opts.vms { "vms" } else { "caches" };
    let mut v = argv(["prune", "--entries", entries]);
    if let Some(days) = opts.older_than_days {
        v.extend(argv(["--older-than", &days.to_string()]));
    }
    if let Some(gb) = opts.space_budget_gb {
        v.extend(argv(["--space-budget", &gb.to_string()]));
    }
    v
}

/// Whether `name` is a remote image reference (anything with a `/`,
/// docs/reference/tart-cli.md §1.6).
pub(crate) fn is_remote(name: &str) -> bool {
    name.contains('/')
}

fn check_image(image: &str) -> Result<(), ArgError> {
    if image.is_empty() || image.starts_with('-') || image.chars().any(char::is_control) {
        return Err(ArgError::InvalidImage(image.to_owned()));
    }
    Ok(())
}

fn argv<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<OsString> {
    items.into_iter().map(OsString::from).collect()
}

/// Render an argv for logs: entries joined by spaces, each in `{:?}` form when it needs quoting.
pub(crate) fn display(args: &[OsString]) -> String {
    args.iter()
        .map(|a| {
            let s = OsStr::new(a).to_string_lossy();
            if s.is_empty() || s.contains(|c: char| c.is_whitespace() || "\"'$;`\\".contains(c)) {
                format!("{s:?}")
            } else {
                s.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
