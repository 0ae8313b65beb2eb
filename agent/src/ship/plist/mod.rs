//! The launchd property list for the agent, generated from a [`PlistSpec`] (pure).
//!
//! `launchd/tart-kubelet.{daemon,agent}.plist` in the repository are this function's output
//! for [`PlistSpec::reference`] (a golden test keeps them in step), so the reason for every
//! key lives in one place: the XML comments written here. Key semantics are from
//! launchd.plist(5); see docs/reference/host-and-conventions.md §1.3 and docs/install.md.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Which launchd flavour to install (docs/reference/host-and-conventions.md §1.1).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Variant {
    /// `/Library/LaunchDaemons`, domain `system`, `UserName` = the auto-login console user.
    /// Starts at boot, survives the loss of the GUI session.
    #[default]
    Daemon,
    /// `/Library/LaunchAgents`, domain `gui/<uid>`, `LimitLoadToSessionType = Aqua`.
    /// Lives exactly as long as the console user's GUI session.
    Agent,
}

impl Variant {
    /// The word used in file names and messages.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Variant::Daemon => "daemon",
            Variant::Agent => "agent",
        }
    }
}

/// Default job label; the plist file is `<label>.plist`.
pub(crate) const DEFAULT_LABEL: &str = "dev.tart-kubelet.agent";
/// File name of launchd's StandardOutPath in the job's log directory.
pub(crate) const STDOUT_LOG: &str = "launchd.stdout.log";
/// File name of launchd's StandardErrorPath in the job's log directory.
pub(crate) const STDERR_LOG: &str = "launchd.stderr.log";
/// Default `ExitTimeOut`: the agent's own shutdown (final Node status, in-flight tart
/// commands reaching their deadlines) must fit; launchd's 20 s default is too short.
pub(crate) const DEFAULT_EXIT_TIMEOUT_SECS: u32 = 120;
/// Default `ThrottleInterval` (launchd's own default, spelled out).
pub(crate) const DEFAULT_THROTTLE_SECS: u32 = 10;
/// `PATH` of the job: Homebrew (arm64 and x86 prefixes) first, then the system.
pub(crate) const JOB_PATH: &str = "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";

/// Everything the plist depends on, resolved to absolute values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlistSpec {
    /// Daemon (system domain, `UserName`) or agent (`gui/<uid>`).
    pub variant: Variant,
    /// Job label, reverse-DNS.
    pub label: String,
    /// Console user the job runs as.
    pub user: String,
    /// That user's home: `HOME` and `WorkingDirectory`.
    pub home: PathBuf,
    /// Absolute path of the agent binary.
    pub binary: PathBuf,
    /// Arguments after the binary (e.g. `--config <file>`); never secrets (`ps` shows them).
    pub args: Vec<String>,
    /// Directory of StandardOutPath / StandardErrorPath.
    pub log_dir: PathBuf,
    /// `TART_HOME` to export, if not Tart's default `~/.tart`.
    pub tart_home: Option<PathBuf>,
    /// `ExitTimeOut` seconds.
    pub exit_timeout_secs: u32,
    /// `ThrottleInterval` seconds.
    pub throttle_secs: u32,
}

/// Why a spec cannot be turned into a plist launchd would accept.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum SpecError {
    /// launchd expands neither `~` nor `$VAR`, and resolves nothing relative.
    #[error("{what} must be an absolute path without '~' or '$': {path}")]
    NotAbsolute {
        /// Which field.
        what: &'static str,
        /// The offending value.
        path: String,
    },
    /// Labels are file stems and `launchctl` targets: keep to a safe alphabet.
    #[error("label {0:?} must be non-empty and use only [A-Za-z0-9.-_]")]
    BadLabel(String),
    /// User names go into `UserName` and `gui/<uid>` lookups.
    #[error("user name {0:?} must be non-empty and use only [A-Za-z0-9._-]")]
    BadUser(String),
    /// `ExitTimeOut = 0` means "forever" and can stall shutdown.
    #[error("exit timeout must be at least 1 second")]
    ZeroExitTimeout,
}

impl PlistSpec {
    /// The fixed input behind the checked-in `launchd/*.plist` files.
    #[cfg(test)]
    pub(crate) fn reference(variant: Variant) -> Self {
        PlistSpec {
            variant,
            label: DEFAULT_LABEL.to_string(),
            user: "admin".to_string(),
            home: PathBuf::from("/Users/admin"),
            binary: PathBuf::from("/opt/homebrew/bin/tart-kubelet"),
            args: vec![
                "--config".to_string(),
                "/opt/homebrew/etc/tart-kubelet/config.toml".to_string(),
            ],
            log_dir: PathBuf::from("/Users/admin/Library/Logs/tart-kubelet"),
            tart_home: None,
            exit_timeout_secs: DEFAULT_EXIT_TIMEOUT_SECS,
            throttle_secs: DEFAULT_THROTTLE_SECS,
        }
    }

    /// Checks the invariants launchd silently depends on.
    pub(crate) fn validate(&self) -> Result<(), SpecError> {
        let ok_chars = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        };
        if !ok_chars(&self.label) {
            return Err(SpecError::BadLabel(self.label.clone()));
        }
        if !ok_chars(&self.user) {
            return Err(SpecError::BadUser(self.user.clone()));
        }
        check_abs("home", &self.home)?;
        check_abs("binary", &self.binary)?;
        check_abs("log dir", &self.log_dir)?;
        if let Some(t) = &self.tart_home {
            check_abs("TART_HOME", t)?;
        }
        if self.exit_timeout_secs == 0 {
            return Err(SpecError::ZeroExitTimeout);
        }
        Ok(())
    }

    /// `<label>.plist`.
    pub(crate) fn file_name(&self) -> String {
        format!("{}.plist", self.label)
    }

    /// launchd's StandardOutPath.
    pub(crate) fn stdout_path(&self) -> PathBuf {
        self.log_dir.join(STDOUT_LOG)
    }

    /// launchd's StandardErrorPath.
    pub(crate) fn stderr_path(&self) -> PathBuf {
        self.log_dir.join(STDERR_LOG)
    }
}

fn check_abs(what: &'static str, p: &Path) -> Result<(), SpecError> {
    let s = p.to_string_lossy();
    if !p.is_absolute() || s.contains('~') || s.contains('$') {
        return Err(SpecError::NotAbsolute {
            what,
            path: s.into_owned(),
        });
    }
    Ok(())
}

/// Escapes the five XML special characters.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// Renders the plist (XML, with a comment explaining each key).
///
/// # Errors
/// [`SpecError`] when the spec breaks an invariant launchd depends on.
pub(crate) fn render(spec: &PlistSpec) -> Result<String, SpecError> {
    spec.validate()?;
    let mut o = String::new();
    let p = |p: &Path| xml(&p.to_string_lossy());
    o.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    o.push_str("<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n");
    let _ = writeln!(
        o,
        "<!-- Generated by tart-kubelet install (variant {}). Edit the configuration and re-run\n     install instead of editing this file. Reasons for each key: docs/install.md. -->",
        spec.variant.as_str()
    );
    o.push_str("<plist version=\"1.0\">\n<dict>\n");
    let _ = writeln!(
        o,
        "  <!-- Unique job id; the file is named <Label>.plist and launchctl targets use it. -->\n  <key>Label</key>\n  <string>{}</string>",
        xml(&spec.label)
    );
    match spec.variant {
        Variant::Daemon => {
            let _ = writeln!(
                o,
                "  <!-- Run as the auto-login console user, not root: Virtualization.framework needs that\n       user's GUI session and unlocked login keychain (tart #921, #1132). -->\n  <key>UserName</key>\n  <string>{}</string>",
                xml(&spec.user)
            );
        }
        Variant::Agent => {
            o.push_str("  <!-- Load only into the console user's GUI (Aqua) session, where VZ can start guests. -->\n  <key>LimitLoadToSessionType</key>\n  <string>Aqua</string>\n");
        }
    }
    o.push_str("  <!-- Absolute binary and a config *file*: launchd expands no ~ or $VARS, and ps shows\n       arguments, so no secrets here. -->\n  <key>ProgramArguments</key>\n  <array>\n");
    let _ = writeln!(o, "    <string>{}</string>", p(&spec.binary));
    for a in &spec.args {
        let _ = writeln!(o, "    <string>{}</string>", xml(a));
    }
    o.push_str("  </array>\n");
    o.push_str("  <!-- launchd sets no HOME for daemons (orchard#308) and a minimal PATH without Homebrew,\n       where `tart` lives. -->\n  <key>EnvironmentVariables</key>\n  <dict>\n");
    let _ = writeln!(
        o,
        "    <key>HOME</key>\n    <string>{}</string>\n    <key>PATH</key>\n    <string>{}</string>",
        p(&spec.home),
        JOB_PATH
    );
    if let Some(t) = &spec.tart_home {
        let _ = writeln!(o, "    <key>TART_HOME</key>\n    <string>{}</string>", p(t));
    }
    o.push_str("  </dict>\n");
    let _ = writeln!(
        o,
        "  <!-- Relative paths in the config resolve against the user's home. -->\n  <key>WorkingDirectory</key>\n  <string>{}</string>",
        p(&spec.home)
    );
    o.push_str("  <!-- Start at load (boot for the daemon, login for the agent) ... -->\n  <key>RunAtLoad</key>\n  <true/>\n");
    o.push_str("  <!-- ... and restart whenever it exits: the node goes NotReady while the agent is down. -->\n  <key>KeepAlive</key>\n  <true/>\n");
    let _ = writeln!(
        o,
        "  <!-- Minimum seconds between respawns, so a crash loop does not spin. -->\n  <key>ThrottleInterval</key>\n  <integer>{}</integer>",
        spec.throttle_secs
    );
    let _ = writeln!(
        o,
        "  <!-- Seconds between SIGTERM and SIGKILL on stop: room for a clean shutdown (launchd's\n       default is 20 s; 0 would mean forever and can stall host shutdown). -->\n  <key>ExitTimeOut</key>\n  <integer>{}</integer>",
        spec.exit_timeout_secs
    );
    o.push_str("  <!-- No background CPU/IO throttling of the agent and the tart processes it spawns\n       (actions/runner #614). -->\n  <key>ProcessType</key>\n  <string>Interactive</string>\n");
    o.push_str("  <!-- Do not kill leftover processes of the job's process group when the agent exits:\n       an agent restart or upgrade must not take running VMs down. -->\n  <key>AbandonProcessGroup</key>\n  <true/>\n");
    let _ = writeln!(
        o,
        "  <!-- Early-crash output only; the agent rotates its own log file (newsyslog only renames). -->\n  <key>StandardOutPath</key>\n  <string>{}</string>\n  <key>StandardErrorPath</key>\n  <string>{}</string>",
        p(&spec.stdout_path()),
        p(&spec.stderr_path())
    );
    o.push_str("</dict>\n</plist>\n");
    Ok(o)
}

#[cfg(test)]
mod tests;
