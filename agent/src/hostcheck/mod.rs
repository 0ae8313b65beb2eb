//! Host readiness checks: can this Mac start a VM at all? Shared by `doctor` (one report) and
//! the node side (checked continuously, keeps new Pods away while one fails).
//!
//! [`verdict`] holds the pure decisions, [`leases`] the pure DHCP lease table parser,
//! [`source`] gathers the facts (macOS commands with deadlines, or a file the tests write on
//! Linux). What to do about a failure (the `TartReady` condition, the cordon) is the node
//! side's business.

#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) mod leases;
pub(crate) mod profiles;
// Compiled everywhere (so it is type-checked on Linux too), used on macOS only.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
mod macos;
pub(crate) mod source;
pub(crate) mod verdict;

/// The checks that decide whether a VM can start; a closed set (metric label `check`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum HostCheck {
    /// The agent's user has a GUI (Aqua) session: Virtualization.framework needs it.
    GuiSession,
    /// The login keychain exists and is unlocked.
    Keychain,
    /// The NAT's DHCP lease table has room for new VMs.
    DhcpLeases,
    /// The softnet binary is root-owned and setuid (only when configured).
    Softnet,
}

impl HostCheck {
    /// Every check, in report order.
    pub(crate) const ALL: [HostCheck; 4] = [
        HostCheck::GuiSession,
        HostCheck::Keychain,
        HostCheck::DhcpLeases,
        HostCheck::Softnet,
    ];

    /// Metric label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HostCheck::GuiSession => "gui_session",
            HostCheck::Keychain => "keychain",
            HostCheck::DhcpLeases => "dhcp_leases",
            HostCheck::Softnet => "softnet",
        }
    }

    /// The `TartReady` reason while this check fails.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            HostCheck::GuiSession => "NoGUISession",
            HostCheck::Keychain => "KeychainNotUsable",
            HostCheck::DhcpLeases => "DHCPLeasesExhausted",
            HostCheck::Softnet => "SoftnetNotSetuid",
        }
    }
}

/// One failing check and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub check: HostCheck,
    /// What was found, for the condition message and the event.
    pub message: String,
}

/// A file's `(owner uid, mode)`, or why it cannot be read.
pub(crate) type OwnerAndMode = Result<(u32, u32), String>;

/// The facts one round of checks found. `None` = not checked (not configured, not macOS, or
/// the command failed to answer in time: the agent never keeps Pods away on a guess).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Observed {
    /// `session = …` of `launchctl print gui/<uid>`; `Some(None)` = no GUI domain at all.
    pub gui_session: Option<Option<String>>,
    /// `Ok` = the login keychain is usable, `Err` = why not.
    pub keychain: Option<Result<(), String>>,
    /// Active leases in Tart's NAT subnet.
    pub dhcp_leases_used: Option<u32>,
    /// The softnet program and its `(owner uid, mode)`, or why it cannot be read.
    pub softnet: Option<(String, OwnerAndMode)>,
}

/// Owner uid and mode of a file.
///
/// # Errors
/// The file cannot be read (its message).
pub(crate) fn owner_and_mode(path: &std::path::Path) -> OwnerAndMode {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path).map_err(|e| e.to_string())?;
    Ok((m.uid(), m.mode()))
}

/// The failing checks in [`HostCheck::ALL`] order. `min_free_leases` is the headroom the
/// lease table must keep (one address per VM slot).
pub(crate) fn evaluate(obs: &Observed, min_free_leases: u32) -> Vec<Failure> {
    let mut out = Vec::new();
    let mut fail = |check, message: Option<String>| {
        if let Some(message) = message {
            out.push(Failure { check, message });
        }
    };
    if let Some(session) = &obs.gui_session {
        fail(
            HostCheck::GuiSession,
            verdict::gui_session_failure(session.as_deref()),
        );
    }
    if let Some(k) = &obs.keychain {
        fail(HostCheck::Keychain, verdict::keychain_failure(k.as_ref()));
    }
    if let Some(used) = obs.dhcp_leases_used {
        fail(
            HostCheck::DhcpLeases,
            verdict::dhcp_leases_failure(used, min_free_leases),
        );
    }
    if let Some((path, stat)) = &obs.softnet {
        fail(
            HostCheck::Softnet,
            verdict::softnet_failure(path, stat.clone()),
        );
    }
    out
}

#[cfg(test)]
mod tests;
