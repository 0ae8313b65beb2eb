//! The clap `Args` of `install`, `uninstall` and `doctor`, and the configuration each works
//! with.

use std::path::PathBuf;

use super::{launchctl::LAUNCHCTL, plist};
use crate::config::{Config, ConfigError, HostDefaults, RunArgs};

/// The configuration a subcommand works with: the caller's `cfg` (top-level flags and
/// environment), unless the subcommand was given its own agent options (`doctor --config F`),
/// which then win.
///
/// # Errors
/// [`ConfigError`] when the subcommand's own options are invalid.
pub(crate) fn effective_config(own: &RunArgs, cfg: &Config) -> Result<Config, ConfigError> {
    if *own == RunArgs::default() {
        return Ok(cfg.clone());
    }
    Config::load(own.clone(), &HostDefaults::detect())
}

/// `tart-kubelet install`: write the launchd plist generated from the configuration and
/// (re)load it with `launchctl bootout` + `bootstrap`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct InstallArgs {
    /// The agent's own options (same as `run`): `--config` is what the job will be started
    /// with, and the rest is validated now so a broken configuration is caught before launchd
    /// restarts the job every ThrottleInterval.
    #[command(flatten)]
    pub run: crate::config::RunArgs,
    /// LaunchDaemon (default) or LaunchAgent.
    #[arg(long, value_enum, default_value_t = plist::Variant::Daemon)]
    pub variant: plist::Variant,
    /// The auto-login console user the agent runs as (`UserName`); default: the owner of
    /// /dev/console on macOS, else the invoking user ($SUDO_USER when run with sudo).
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// That user's home directory (`HOME` of the job); default: from the user database.
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Absolute path of the tart-kubelet binary the job runs; default: this executable.
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,
    /// Directory for launchd's StandardOutPath/StandardErrorPath (early-crash output only);
    /// default: <home>/Library/Logs/tart-kubelet.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// launchd job label (also the plist file stem).
    #[arg(long, default_value = plist::DEFAULT_LABEL)]
    pub label: String,
    /// Seconds launchd waits between SIGTERM and SIGKILL (`ExitTimeOut`).
    #[arg(long, value_name = "SECONDS", default_value_t = plist::DEFAULT_EXIT_TIMEOUT_SECS)]
    pub exit_timeout: u32,
    /// Minimum seconds between two spawns of the job (`ThrottleInterval`).
    #[arg(long, value_name = "SECONDS", default_value_t = plist::DEFAULT_THROTTLE_SECS)]
    pub throttle_interval: u32,
    /// How the job is (re)loaded.
    #[command(flatten)]
    pub job: JobControl,
}

/// `tart-kubelet uninstall`: `launchctl bootout` the job, wait until it is gone, remove the
/// plist; with `--purge`, then remove what the agent created on this Mac.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct UninstallArgs {
    /// The agent's own options (same as `run`): with `--purge`, the configuration whose paths
    /// are removed (`--config`, default the installed one).
    #[command(flatten)]
    pub run: crate::config::RunArgs,
    /// LaunchDaemon (default) or LaunchAgent.
    #[arg(long, value_enum, default_value_t = plist::Variant::Daemon)]
    pub variant: plist::Variant,
    /// The console user the agent ran as (for --variant agent, to find gui/<uid>; with
    /// --purge, whose home the configuration's defaults are under); default as for install.
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// With --purge: that user's home directory; default: from the user database.
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// With --purge: launchd's log directory, if install was given --log-dir.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// Also stop and delete the agent's VMs and golden bases and remove its guest
    /// directories, serving keys, logs and state (the OCI cache stays).
    #[arg(long)]
    pub purge: bool,
    /// With --purge: also remove the OCI image cache ($TART_HOME/cache/OCIs).
    #[arg(long, requires = "purge")]
    pub purge_images: bool,
    /// launchd job label (also the plist file stem).
    #[arg(long, default_value = plist::DEFAULT_LABEL)]
    pub label: String,
    /// How the job is unloaded.
    #[command(flatten)]
    pub job: JobControl,
}

/// How `install` and `uninstall` drive launchd.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct JobControl {
    /// Directory of the plist; default /Library/LaunchDaemons or /Library/LaunchAgents.
    #[arg(long, value_name = "DIR")]
    pub plist_dir: Option<PathBuf>,
    /// Deadline in seconds for the old job to be really gone after `bootout` (and, on install,
    /// for the new one to report a PID after `bootstrap`).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub wait_timeout: u64,
    /// Print exactly what would be written, removed and run; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// launchctl program (tests point this at a stand-in).
    #[arg(long, hide = true, default_value = LAUNCHCTL)]
    pub launchctl: PathBuf,
}

/// `tart-kubelet doctor`: preflight checks with actionable messages; exits non-zero when
/// something blocks the agent from working.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct DoctorArgs {
    /// The agent's own options (same as `run`, including `--config`): doctor checks the
    /// configuration the agent would run with.
    #[command(flatten)]
    pub run: crate::config::RunArgs,
    /// Print the report as JSON lines instead of text.
    #[arg(long)]
    pub json: bool,
    /// Skip the checks that talk to the API server (kubeconfig, RBAC).
    #[arg(long)]
    pub offline: bool,
    /// Treat warnings as blocking (non-zero exit).
    #[arg(long)]
    pub strict: bool,
    /// The softnet binary to check for root ownership and setuid, if VMs use
    /// `--net-softnet` (e.g. /opt/homebrew/bin/softnet).
    #[arg(long, value_name = "PATH")]
    pub softnet: Option<PathBuf>,
    /// Deadline in seconds for each external call doctor makes.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub call_timeout: u64,
    /// Instead of the checks, the first-day self-test (no cluster needed): clone IMAGE (pulled
    /// if absent), set it, boot it with the guest's shares, check a command run through the
    /// guest launcher and a `tart exec`, then stop and delete the VM (docs/operations.md,
    /// "First-day self-test").
    #[arg(long, value_name = "IMAGE")]
    pub smoke: Option<String>,
    /// With --smoke: deadline in seconds of the wait for the guest launcher, of the `exec`, and
    /// of the command's end.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub smoke_timeout: u64,
}
