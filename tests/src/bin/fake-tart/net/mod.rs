//! `tart run`'s network and root-disk flags as Tart checks them, and what `tart ip` finds for a
//! VM on each network (docs/reference/tart-cli.md §2.6, §2.11, §3.3). Pure: the parsed argv and
//! the fake host's knobs in, a decision out; `vm.rs` and `guest.rs` act on it.

use crate::cli::Parsed;
use crate::error::Failure;
use crate::knobs::{BridgeInterface, SoftnetSetup};

/// The network a `tart run` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunNet {
    /// No network flag: the shared NAT.
    Shared,
    /// `--net-softnet`, or an option that implies it.
    Softnet,
    /// `--net-host`: softnet in host-only mode.
    Host,
    /// `--net-bridged`, every value as given.
    Bridged(Vec<String>),
}

/// The options that imply `--net-softnet`.
const SOFTNET_OPTIONS: [&str; 4] = [
    "net-softnet-allow",
    "net-softnet-block",
    "net-softnet-expose",
    "net-softnet-control-fd",
];

const CONTROL_FD: &str = "net-softnet-control-fd";

impl RunNet {
    /// The network of a parsed `run` command line; conflicts are [`validate`]'s business, and
    /// here bridged wins over softnet over host.
    pub(crate) fn of(p: &Parsed) -> RunNet {
        if !p.opts("net-bridged").is_empty() {
            RunNet::Bridged(p.opts("net-bridged").to_vec())
        } else if p.flag("net-softnet") || SOFTNET_OPTIONS.iter().any(|o| p.opt(o).is_some()) {
            RunNet::Softnet
        } else if p.flag("net-host") {
            RunNet::Host
        } else {
            RunNet::Shared
        }
    }

    /// Whether Tart starts the `softnet` program for this network.
    pub(crate) fn uses_softnet(&self) -> bool {
        matches!(self, RunNet::Softnet | RunNet::Host)
    }
}

/// Tart's `validate()` checks of the display and network flags, in its order, before the VM is
/// opened: E4 (`Error: <msg>` and `run`'s usage, exit 64). A control descriptor that is not a
/// number is a parse error, before any of them.
pub(crate) fn validate(p: &Parsed) -> Result<RunNet, Failure> {
    if let Some(fd) = p.opt(CONTROL_FD)
        && fd.parse::<i32>().is_err()
    {
        return Err(Failure::usage(
            "run",
            format!("The value '{fd}' is invalid for '--{CONTROL_FD} <file descriptor>'"),
        ));
    }
    if p.flag("vnc") && p.flag("vnc-experimental") {
        return Err(Failure::usage(
            "run",
            "--vnc and --vnc-experimental are mutually exclusive",
        ));
    }
    let net = RunNet::of(p);
    let softnet = p.flag("net-softnet") || SOFTNET_OPTIONS.iter().any(|o| p.opt(o).is_some());
    let modes = [
        !p.opts("net-bridged").is_empty(),
        softnet,
        p.flag("net-host"),
    ];
    if modes.iter().filter(|m| **m).count() > 1 {
        return Err(Failure::usage(
            "run",
            "--net-bridged, --net-softnet and --net-host are mutually exclusive",
        ));
    }
    if p.flag("graphics") && p.flag("no-graphics") {
        return Err(Failure::usage(
            "run",
            "--graphics and --no-graphics are mutually exclusive",
        ));
    }
    let no_default_view = p.flag("no-graphics") || p.flag("vnc") || p.flag("vnc-experimental");
    if no_default_view && p.flag("capture-system-keys") {
        return Err(Failure::usage(
            "run",
            "--captures-system-keys can only be used with the default VM view",
        ));
    }
    Ok(net)
}

/// `validate()`'s last check, once the VM is known to exist: an x86 ISO among the disks.
pub(crate) fn validate_disks(p: &Parsed) -> Result<(), Failure> {
    if p.opts("disk").iter().any(|d| d.ends_with("-amd64.iso")) {
        return Err(Failure::usage(
            "run",
            "Seems you have a disk targeting x86 architecture (hence amd64 in the name). Please use an 'arm64' version of the disk.",
        ));
    }
    Ok(())
}

/// Building the VM's network, under the `$TART_HOME` flock and before the config lock: softnet's
/// control descriptor and program (E2, exit 1), or each bridged interface (E3, exit 64).
pub(crate) fn build(
    net: &RunNet,
    p: &Parsed,
    softnet: SoftnetSetup,
    interfaces: &[BridgeInterface],
) -> Result<(), Failure> {
    if net.uses_softnet() {
        let fd = p.opt(CONTROL_FD).and_then(|fd| fd.parse::<i32>().ok());
        if fd.is_some_and(|fd| fd <= 2) {
            return Err(softnet_init_failed(
                "Softnet control file descriptor must be greater than 2",
            ));
        }
        if softnet == SoftnetSetup::Missing {
            return Err(softnet_init_failed("softnet not found in PATH"));
        }
    }
    if let RunNet::Bridged(names) = net {
        let known = |name: &String| {
            interfaces
                .iter()
                .any(|i| &i.identifier == name || i.display_name.as_ref() == Some(name))
        };
        if !names.iter().all(known) {
            let available: Vec<String> = interfaces
                .iter()
                .map(|i| match &i.display_name {
                    Some(d) => format!("{} (or \"{d}\")", i.identifier),
                    None => i.identifier.clone(),
                })
                .collect();
            return Err(Failure::validation(format!(
                "no bridge interfaces matched \"{}\", available interfaces: {}",
                swift_array(names),
                swift_array(&available)
            )));
        }
    }
    Ok(())
}

fn softnet_init_failed(why: &str) -> Failure {
    Failure::other(format!("InitializationFailed(why: \"{why}\")"))
}

/// The two lines `run` prints when softnet exits at once because it cannot become root: the
/// softnet program's own on the inherited stderr, then Tart's (E1, exit 1).
pub(crate) fn softnet_died() -> (&'static str, Failure) {
    (
        "root privileges are required to run and passwordless sudo was not available",
        Failure::runtime(
            "RuntimeFailed(why: \"Softnet process terminated prematurely\")",
            1,
        ),
    )
}

/// `--root-disk-opts` as Tart reads it while building the VM: comma-separated, `ro`, `sync=`
/// and `caching=` (the last of each wins), anything else ignored; an unknown mode is E1, exit 1.
pub(crate) fn root_disk(opts: Option<&str>) -> Result<(), Failure> {
    let (mut sync, mut caching) = ("", "");
    for opt in opts.unwrap_or("").split(',') {
        if let Some(v) = opt.strip_prefix("sync=") {
            sync = v;
        } else if let Some(v) = opt.strip_prefix("caching=") {
            caching = v;
        }
    }
    if !["", "none", "fsync", "full"].contains(&sync) {
        return Err(Failure::runtime(
            format!("unsupported disk image synchronization mode: \"{sync}\""),
            1,
        ));
    }
    if !["", "automatic", "cached", "uncached"].contains(&caching) {
        return Err(Failure::runtime(
            format!("unsupported disk image caching mode: \"{caching}\""),
            1,
        ));
    }
    Ok(())
}

/// Swift's description of an array of strings: `["a", "b \"c\""]`.
fn swift_array(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

/// `tart ip --resolver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolver {
    Dhcp,
    Arp,
    Agent,
}

impl Resolver {
    pub(crate) fn parse(s: &str) -> Option<Resolver> {
        match s {
            "dhcp" => Some(Resolver::Dhcp),
            "arp" => Some(Resolver::Arp),
            "agent" => Some(Resolver::Agent),
            _ => None,
        }
    }
}

/// Which of a running guest's addresses a resolver finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// Its `bootpd` lease: shared NAT, softnet and host-only guests.
    Lease,
    /// Its address on the LAN it is bridged to.
    Lan,
    /// Nothing: the resolver cannot see this guest.
    Nothing,
}

/// What `resolver` finds for a booted guest on `net` (docs/reference/tart-cli.md §2.11, §3.3):
/// `dhcp` reads `bootpd`'s leases, which a bridged guest never takes; `arp` reads the host's ARP
/// table, where a bridged or NAT guest appears but not one behind softnet; the guest agent
/// knows the guest's own address on every network.
pub(crate) fn found(net: &RunNet, resolver: Resolver) -> Found {
    match (net, resolver) {
        (RunNet::Bridged(_), Resolver::Dhcp) => Found::Nothing,
        (RunNet::Bridged(_), Resolver::Arp | Resolver::Agent) => Found::Lan,
        (RunNet::Softnet | RunNet::Host, Resolver::Arp) => Found::Nothing,
        (RunNet::Shared | RunNet::Softnet | RunNet::Host, _) => Found::Lease,
    }
}

#[cfg(test)]
mod tests;
