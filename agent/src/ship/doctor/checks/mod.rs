//! Doctor verdicts (pure): gathered facts -> [`Check`] with an actionable fix.
use super::super::rbac::Permission;
use crate::{config::Identity, hostcheck::verdict};

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Status {
    /// Fine.
    Ok,
    /// Not applicable here (macOS-only on another OS, or not configured).
    Skipped,
    /// Works, but degraded or risky.
    Warn,
    /// Blocks the agent: doctor exits non-zero.
    Fail,
}

impl Status {
    /// Fixed-width tag for the text report.
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Status::Ok => "[ ok ]",
            Status::Skipped => "[skip]",
            Status::Warn => "[warn]",
            Status::Fail => "[FAIL]",
        }
    }

    /// Lowercase name for JSON.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Skipped => "skipped",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    /// Short stable id, e.g. `tart`, `rbac`.
    pub name: &'static str,
    /// Verdict.
    pub status: Status,
    /// What was found.
    pub message: String,
    /// What to do about it (for warn/fail).
    pub fix: Option<String>,
}

impl Check {
    /// A check with no fix.
    pub(crate) fn new(name: &'static str, status: Status, message: impl Into<String>) -> Self {
        Self {
            name,
            status,
            message: message.into(),
            fix: None,
        }
    }

    /// Adds the fix.
    pub(crate) fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// `macOS only` skip: what `doctor` reports for the macOS checks on another system.
    #[cfg(any(test, not(target_os = "macos")))]
    pub(crate) fn macos_only(name: &'static str) -> Self {
        Self::new(name, Status::Skipped, "skipped: macOS-only check")
    }
}

/// Exit code of the report: 1 when something blocks (or warns, with `strict`).
pub(crate) fn exit_code(checks: &[Check], strict: bool) -> u8 {
    let worst = checks.iter().map(|c| c.status).max().unwrap_or(Status::Ok);
    u8::from(worst == Status::Fail || (strict && worst == Status::Warn))
}

/// Text report: one line per check, the fix indented below.
pub(crate) fn render_text(checks: &[Check]) -> String {
    let mut o = String::new();
    for c in checks {
        o.push_str(&format!(
            "{} {:<12} {}\n",
            c.status.tag(),
            c.name,
            c.message
        ));
        if let Some(f) = &c.fix {
            for l in f.lines() {
                o.push_str(&format!("{:20}fix: {l}\n", ""));
            }
        }
    }
    let n = |s| checks.iter().filter(|c| c.status == s).count();
    o.push_str(&format!(
        "{} ok, {} warnings, {} failures, {} skipped\n",
        n(Status::Ok),
        n(Status::Warn),
        n(Status::Fail),
        n(Status::Skipped)
    ));
    o
}

/// Result of `tart --version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TartProbe {
    /// Not found on PATH / not executable.
    NotFound(String),
    /// Ran; stdout.
    Version {
        /// Resolved program path.
        path: String,
        output: String,
    },
    /// Ran but failed or timed out.
    Broken(String),
}

/// `2.35.0` anywhere in the first line (`SNAPSHOT` builds have none).
pub(crate) fn version_in(output: &str) -> Option<(u32, u32, u32)> {
    output
        .lines()
        .next()?
        .split_whitespace()
        .find_map(crate::config::parse_semver)
}

/// Verdict on the tart binary.
pub(crate) fn tart_check(p: &TartProbe, min: (u32, u32, u32)) -> Check {
    let min_s = format!("{}.{}.{}", min.0, min.1, min.2);
    match p {
        TartProbe::NotFound(what) => {
            Check::new("tart", Status::Fail, format!("tart not found: {what}"))
                .fix("brew install cirruslabs/cli/tart, or set --tart-program to its absolute path")
        }
        TartProbe::Broken(e) => Check::new(
            "tart",
            Status::Fail,
            format!("`tart --version` failed: {e}"),
        )
        .fix("run `tart --version` as this user; reinstall tart if it crashes"),
        TartProbe::Version { path, output } => match version_in(output) {
            Some(v) if v >= min => Check::new(
                "tart",
                Status::Ok,
                format!("tart {}.{}.{} at {path} (minimum {min_s})", v.0, v.1, v.2),
            ),
            Some(v) => Check::new(
                "tart",
                Status::Fail,
                format!(
                    "tart {}.{}.{} at {path} is older than the minimum {min_s}",
                    v.0, v.1, v.2
                ),
            )
            .fix("brew upgrade tart (the Node stays TartReady=False until then)"),
            None => Check::new(
                "tart",
                Status::Warn,
                format!("cannot tell the version of {path} from {:?}", output.trim()),
            )
            .fix(format!(
                "use a released tart >= {min_s}; a SNAPSHOT build is not checked"
            )),
        },
    }
}

/// Facts about `TART_HOME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TartHomeProbe {
    /// The directory.
    pub path: String,
    /// `Err` = cannot create or write a file in it.
    pub writable: Result<(), String>,
    /// Volume total and free bytes.
    pub volume: Option<(u64, u64)>,
    /// DiskPressure threshold in free bytes for that volume.
    pub min_free: u64,
}

fn gb(b: u64) -> String {
    format!("{:.1} GB", b as f64 / 1e9)
}

/// Verdicts on `TART_HOME`: writable, and free space against the DiskPressure threshold.
pub(crate) fn tart_home_checks(p: &TartHomeProbe) -> Vec<Check> {
    let w = match &p.writable {
        Ok(()) => Check::new("tart-home", Status::Ok, format!("{} is writable", p.path)),
        Err(e) => Check::new(
            "tart-home",
            Status::Fail,
            format!("{} is not writable: {e}", p.path),
        )
        .fix(format!(
            "chown -R <agent user> {} (the agent runs as the console user)",
            p.path
        )),
    };
    let s = match p.volume {
        None => Check::new("disk-space", Status::Warn, "cannot read the free space of TART_HOME's volume"),
        Some((_, free)) if free < p.min_free => Check::new(
            "disk-space",
            Status::Fail,
            format!("{} free on TART_HOME's volume, under the DiskPressure threshold {}", gb(free), gb(p.min_free)),
        )
        .fix("free space: `tart prune --entries caches`, delete stale VMs (`tart list`), or lower --disk-pressure-free"),
        // One macOS image needs ~25 GB compressed in the cache plus ~50 GB per clone.
        Some((_, free)) if free < p.min_free + 75_000_000_000 => Check::new(
            "disk-space",
            Status::Warn,
            format!("{} free on TART_HOME's volume: room for about one more image and clone", gb(free)),
        )
        .fix("plan for ~75 GB per distinct macOS image (cache + clone)"),
        Some((total, free)) => Check::new(
            "disk-space",
            Status::Ok,
            format!("{} free of {} (DiskPressure under {})", gb(free), gb(total), gb(p.min_free)),
        ),
    };
    vec![w, s]
}

/// Verdict on the RBAC reviews of the permissions `identity` needs: `(permission, allowed)`.
pub(crate) fn rbac_check(
    user: &str,
    identity: Identity,
    results: &[(Permission, Result<bool, String>)],
) -> Check {
    let missing: Vec<String> = results
        .iter()
        .filter(|(_, r)| matches!(r, Ok(false)))
        .map(|(p, _)| p.display())
        .collect();
    let errors: Vec<String> = results
        .iter()
        .filter_map(|(p, r)| r.as_ref().err().map(|e| format!("{}: {e}", p.display())))
        .collect();
    if !missing.is_empty() {
        return Check::new(
            "rbac",
            Status::Fail,
            format!("{user} is missing {} permission(s): {}", missing.len(), missing.join("; ")),
        )
        .fix(match identity {
            Identity::Agent => "kubectl apply -f packaging/kubernetes/rbac.yaml and bind the agent's identity to its ClusterRole (docs/install.md#kubeconfig-and-rbac)",
            Identity::Node => "the API server must run --authorization-mode=Node,... and the credentials must be system:node:<node> in system:nodes (docs/install.md#node-identity); pre-pull needs the last two Roles of packaging/kubernetes/rbac.yaml (docs/images.md)",
        });
    }
    if !errors.is_empty() {
        return Check::new(
            "rbac",
            Status::Fail,
            format!("cannot check permissions: {}", errors.join("; ")),
        );
    }
    Check::new(
        "rbac",
        Status::Ok,
        format!(
            "{user} has all {} permissions the agent needs",
            results.len()
        ),
    )
}

/// Verdict on `--vm-slots` against Apple's two-macOS-guest limit.
pub(crate) fn vm_slots_check(slots: u32, foreign_running: &[String]) -> Check {
    if slots > 2 {
        return Check::new(
            "vm-limit",
            Status::Warn,
            format!("--vm-slots {slots}: macOS runs at most 2 macOS guests per host; a third `tart run` fails with 'The number of VMs exceeds the system limit'"),
        )
        .fix("use --vm-slots 2 unless every extra guest is a Linux VM");
    }
    if !foreign_running.is_empty() {
        return Check::new(
            "vm-limit",
            Status::Warn,
            format!(
                "{} VM(s) not managed by the agent are running and take VM slots: {}",
                foreign_running.len(),
                foreign_running.join(", ")
            ),
        )
        .fix("stop them (`tart stop <name>`) or lower --vm-slots");
    }
    Check::new(
        "vm-limit",
        Status::Ok,
        format!("{slots} VM slot(s), within the 2-guest limit; no foreign VMs running"),
    )
}

/// Verdict on the console user's GUI session (`launchctl print gui/<uid>`); the decision is
/// the one the node's live host check makes ([`crate::hostcheck::verdict`]).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) fn gui_session_check(session: Option<&str>, user: &str) -> Check {
    match verdict::gui_session_failure(session) {
        None => Check::new("gui-session", Status::Ok, format!("{user} has a GUI (Aqua) session")),
        Some(_) => Check::new(
            "gui-session",
            Status::Fail,
            format!("{user} has no GUI session (found {session:?}): Virtualization.framework will not start macOS guests"),
        )
        .fix("enable auto-login for this user, then `sudo launchctl kickstart -k system/com.apple.loginwindow` (a headless Mac mini may need a display or dummy plug)"),
    }
}

/// Verdict on the login keychain (`security show-keychain-info login.keychain`).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) fn keychain_check(state: Result<(), String>) -> Check {
    match verdict::keychain_failure(state.as_ref()) {
        None => Check::new(
            "keychain",
            Status::Ok,
            "login keychain exists and is unlocked",
        ),
        Some(m) => Check::new("keychain", Status::Warn, m)
            .fix("log in once in the GUI (creates it); auto-login unlocks it at boot"),
    }
}

/// Verdict on auto-login (`defaults read /Library/Preferences/com.apple.loginwindow autoLoginUser`).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) fn auto_login_check(auto_login_user: Option<&str>, user: &str) -> Check {
    match auto_login_user {
        Some(u) if u == user => Check::new("auto-login", Status::Ok, format!("auto-login is set to {user}")),
        Some(u) => Check::new(
            "auto-login",
            Status::Fail,
            format!("auto-login is set to {u}, but the agent runs as {user}"),
        )
        .fix("run the agent as the auto-login user (install --user), or change auto-login"),
        None => Check::new("auto-login", Status::Fail, "auto-login is off: after a reboot no GUI session exists and VMs cannot start")
            .fix("System Settings > Users & Groups > Automatically log in as (docs/install.md#auto-login)"),
    }
}

/// Verdict on bootpd's DHCP lease time (Tart's NAT hands out 192.168.64.0/24).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) fn dhcp_lease_check(secs: Option<u64>) -> Check {
    match secs {
        Some(s) if s <= 3600 => Check::new("dhcp-lease", Status::Ok, format!("DHCP lease time {s} s")),
        Some(s) => Check::new(
            "dhcp-lease",
            Status::Warn,
            format!("DHCP lease time {s} s: short-lived VMs exhaust the 253 addresses of 192.168.64.0/24"),
        )
        .fix("sudo defaults write /Library/Preferences/SystemConfiguration/com.apple.InternetSharing.default.plist bootpd -dict DHCPLeaseTimeSecs -int 600"),
        None => Check::new(
            "dhcp-lease",
            Status::Warn,
            "DHCP lease time not set: macOS's default is 86400 s (1 day), so short-lived VMs exhaust 192.168.64.0/24",
        )
        .fix("sudo defaults write /Library/Preferences/SystemConfiguration/com.apple.InternetSharing.default.plist bootpd -dict DHCPLeaseTimeSecs -int 600"),
    }
}

/// Verdict on the softnet binary: it must be owned by root and setuid.
pub(crate) fn softnet_check(path: &str, stat: Result<(u32, u32), String>) -> Check {
    let missing = stat.is_err();
    match verdict::softnet_failure(path, stat) {
        None => Check::new(
            "softnet",
            Status::Ok,
            format!("{path} is root-owned and setuid"),
        ),
        Some(m) if missing => {
            Check::new("softnet", Status::Fail, m).fix("brew install cirruslabs/cli/softnet")
        }
        Some(m) => Check::new("softnet", Status::Fail, m)
            .fix(format!("sudo chown root {path} && sudo chmod u+s {path}")),
    }
}

#[cfg(test)]
mod tests;
