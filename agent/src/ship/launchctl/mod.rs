//! The install/uninstall plan as data (pure): which files to write or remove and which
//! `launchctl` commands to run in which order, plus the parser of `launchctl print` for a job.
//!
//! `--dry-run` prints [`render_plan`]; the real run executes the same steps
//! (the `install` module), so what is printed is exactly what is done. launchctl 2 syntax,
//! docs/reference/host-and-conventions.md §1.5: `bootout` returns before the job has exited, and a
//! `bootstrap` during that window fails with "Bootstrap failed: 5", so every bootout is
//! followed by a poll of `launchctl print` until the job is really gone.
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// The real launchctl.
pub(crate) const LAUNCHCTL: &str = "/bin/launchctl";

/// A launchd domain target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Domain {
    /// `system` (LaunchDaemons).
    System,
    /// `gui/<uid>` (LaunchAgents in a user's Aqua session).
    Gui(u32),
}

impl Domain {
    /// `system` or `gui/<uid>`.
    pub(crate) fn target(&self) -> String {
        match self {
            Domain::System => "system".to_string(),
            Domain::Gui(uid) => format!("gui/{uid}"),
        }
    }

    /// `<domain>/<label>`: the service target of `print`, `bootout`, `enable`, `kickstart`.
    pub(crate) fn service(&self, label: &str) -> String {
        format!("{}/{label}", self.target())
    }
}

/// One step of an install or uninstall.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// `mkdir -p`, then chown to `owner` (user name; group = the user's primary group).
    CreateDir {
        /// Directory.
        path: PathBuf,
        /// Owner user name.
        owner: String,
    },
    /// Write the file atomically (temp file + rename) with `root:wheel` and `mode`.
    WriteFile {
        /// Destination.
        path: PathBuf,
        /// Unix permission bits.
        mode: u32,
        /// Full contents.
        contents: String,
    },
    /// Remove the file; a missing file is fine.
    RemoveFile {
        /// File to remove.
        path: PathBuf,
    },
    /// `launchctl bootout <service>` only if `launchctl print <service>` succeeds.
    BootoutIfLoaded {
        /// `<domain>/<label>`.
        service: String,
    },
    /// Poll `launchctl print <service>` until it fails (the job is gone).
    WaitGone {
        /// `<domain>/<label>`.
        service: String,
        /// Give up (error) after this long.
        deadline: Duration,
    },
    /// `launchctl enable <service>`: clears a persistent `disable` override.
    Enable {
        /// `<domain>/<label>`.
        service: String,
    },
    /// `launchctl bootstrap <domain> <plist>`.
    Bootstrap {
        /// `system` or `gui/<uid>`.
        domain: String,
        /// The plist just written.
        plist: PathBuf,
    },
    /// Poll `launchctl print <service>` until it reports a `pid`.
    WaitRunning {
        /// `<domain>/<label>`.
        service: String,
        /// Give up (error) after this long.
        deadline: Duration,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstallPlanInput {
    /// Where the job is loaded.
    pub domain: Domain,
    /// Job label.
    pub label: String,
    /// Full path of the plist to write.
    pub plist_path: PathBuf,
    /// Its contents ([`super::plist::render`]).
    pub plist: String,
    /// launchd's log directory, created for and owned by this user.
    pub log_dir: PathBuf,
    /// Console user.
    pub user: String,
    /// Deadline of each poll.
    pub wait: Duration,
}

/// The idempotent install: write, unload whatever is loaded under the label, wait for it to be
/// gone, enable, load, wait for a PID.
pub(crate) fn install_plan(i: &InstallPlanInput) -> Vec<Step> {
    let service = i.domain.service(&i.label);
    vec![
        Step::CreateDir {
            path: i.log_dir.clone(),
            owner: i.user.clone(),
        },
        Step::WriteFile {
            path: i.plist_path.clone(),
            mode: 0o644,
            contents: i.plist.clone(),
        },
        Step::BootoutIfLoaded {
            service: service.clone(),
        },
        Step::WaitGone {
            service: service.clone(),
            deadline: i.wait,
        },
        Step::Enable {
            service: service.clone(),
        },
        Step::Bootstrap {
            domain: i.domain.target(),
            plist: i.plist_path.clone(),
        },
        Step::WaitRunning {
            service,
            deadline: i.wait,
        },
    ]
}

/// The idempotent uninstall: unload if loaded, wait until gone, remove the plist. Log files are
/// left in place.
pub(crate) fn uninstall_plan(
    domain: &Domain,
    label: &str,
    plist_path: PathBuf,
    wait: Duration,
) -> Vec<Step> {
    let service = domain.service(label);
    vec![
        Step::BootoutIfLoaded {
            service: service.clone(),
        },
        Step::WaitGone {
            service,
            deadline: wait,
        },
        Step::RemoveFile { path: plist_path },
    ]
}

/// The `--dry-run` text: every file with its full contents and every command with its argv.
pub(crate) fn render_plan(steps: &[Step]) -> String {
    let mut o = String::new();
    for (n, s) in steps.iter().enumerate() {
        let n = n + 1;
        let _ = match s {
            Step::CreateDir { path, owner } => writeln!(
                o,
                "{n}. mkdir -p {} && chown {owner} {}",
                path.display(),
                path.display()
            ),
            Step::WriteFile {
                path,
                mode,
                contents,
            } => write!(
                o,
                "{n}. write {} (owner root:wheel, mode {mode:04o}, {} bytes):\n{contents}{}",
                path.display(),
                contents.len(),
                if contents.ends_with('\n') { "" } else { "\n" }
            ),
            Step::RemoveFile { path } => {
                writeln!(o, "{n}. rm -f {}", path.display())
            }
            Step::BootoutIfLoaded { service } => writeln!(
                o,
                "{n}. if `launchctl print {service}` succeeds: launchctl bootout {service}"
            ),
            Step::WaitGone { service, deadline } => writeln!(
                o,
                "{n}. poll `launchctl print {service}` until it fails (deadline {} s)",
                deadline.as_secs()
            ),
            Step::Enable { service } => writeln!(o, "{n}. launchctl enable {service}"),
            Step::Bootstrap { domain, plist } => {
                writeln!(o, "{n}. launchctl bootstrap {domain} {}", plist.display())
            }
            Step::WaitRunning { service, deadline } => writeln!(
                o,
                "{n}. poll `launchctl print {service}` until it shows a pid (deadline {} s)",
                deadline.as_secs()
            ),
        };
    }
    o
}

/// What `launchctl print <service>` says about a job. The format is explicitly unstable, so
/// only the few `key = value` lines at the job's top level are read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JobStatus {
    /// `state = running|waiting|...`.
    pub state: Option<String>,
    /// `pid = N` when running.
    pub pid: Option<u32>,
    /// `last exit code = N`; `None` for "(never exited)".
    pub last_exit_code: Option<i32>,
}

/// Parses `launchctl print system/<label>` output. Nested blocks (`environment = { ... }`)
/// are skipped so their keys cannot shadow the job's own.
pub(crate) fn parse_print(text: &str) -> JobStatus {
    let mut st = JobStatus::default();
    let mut depth = 0usize;
    for line in text.lines() {
        let t = line.trim();
        if t.ends_with('{') {
            depth += 1;
            continue;
        }
        if t == "}" {
            depth = depth.saturating_sub(1);
            continue;
        }
        if depth != 1 {
            continue;
        }
        let Some((k, v)) = t.split_once(" = ") else {
            continue;
        };
        match k {
            "state" if st.state.is_none() => st.state = Some(v.to_string()),
            "pid" if st.pid.is_none() => st.pid = v.parse().ok(),
            "last exit code" if st.last_exit_code.is_none() => st.last_exit_code = v.parse().ok(),
            _ => {}
        }
    }
    st
}

#[cfg(test)]
mod tests;
