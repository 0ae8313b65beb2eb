//! `tart-kubelet install` / `uninstall`: resolve the arguments and the configuration into a
//! [`PlistSpec`] and a [`Step`] plan (pure), then print it (`--dry-run`) or execute it.
//!
//! Execution needs root (the plist goes to /Library and is owned by root:wheel) and macOS's
//! `launchctl`. A hidden `--launchctl PATH` points at another program so the executor can be
//! exercised on Linux with a stand-in (tests/tests/e2e/ship_install.rs).
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::process::Command;
use tokio::time::{Instant, timeout};

use super::launchctl::{self, Domain, InstallPlanInput, Step};
use super::plist::{self, PlistSpec};
use super::{InstallArgs, UninstallArgs, Variant};
use crate::config::{Config, HostDefaults};

mod purge;

/// The config file the job is started with when `--config` is not given (Homebrew's etc on
/// Apple silicon; packaging/homebrew installs the example there).
pub(crate) const DEFAULT_CONFIG_PATH: &str = "/opt/homebrew/etc/tart-kubelet/config.toml";
/// Deadline of one `launchctl` invocation.
const LAUNCHCTL_DEADLINE: Duration = Duration::from_secs(15);
/// Poll period while waiting for a job to go away or come up.
const POLL: Duration = Duration::from_millis(250);

/// Facts about the invoking host that the pure resolution needs.
#[derive(Debug, Clone)]
pub(crate) struct HostFacts {
    /// Resolved console user.
    pub user: String,
    /// Their home.
    pub home: PathBuf,
    /// Their uid (for `gui/<uid>`); `None` for a user unknown to this system.
    pub uid: Option<u32>,
    /// This executable.
    pub current_exe: PathBuf,
    /// Working directory, to absolutize a relative `--config`.
    pub cwd: PathBuf,
}

/// Default plist directory of a variant.
pub(crate) fn default_plist_dir(v: Variant) -> PathBuf {
    match v {
        Variant::Daemon => PathBuf::from("/Library/LaunchDaemons"),
        Variant::Agent => PathBuf::from("/Library/LaunchAgents"),
    }
}

fn domain(v: Variant, uid: Option<u32>) -> anyhow::Result<Domain> {
    Ok(match v {
        Variant::Daemon => Domain::System,
        Variant::Agent => Domain::Gui(
            uid.context("the LaunchAgent variant needs a user that exists here (gui/<uid>)")?,
        ),
    })
}

/// The directory of launchd's StandardOutPath/StandardErrorPath: `--log-dir`, else the
/// directory of the agent's log file, else `<home>/Library/Logs/tart-kubelet`.
pub(crate) fn launchd_log_dir(arg: Option<&Path>, cfg: &Config, home: &Path) -> PathBuf {
    match (arg, &cfg.log_file) {
        (Some(d), _) => d.to_path_buf(),
        (None, Some(f)) => f
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| home.to_path_buf()),
        (None, None) => home.join("Library/Logs/tart-kubelet"),
    }
}

/// Pure: arguments + configuration + host facts -> the plist spec and the plan.
///
/// # Errors
/// When the resulting plist would be invalid (relative paths, bad label, ...).
pub(crate) fn resolve_install(
    args: &InstallArgs,
    cfg: &Config,
    host: &HostFacts,
) -> anyhow::Result<(PlistSpec, Vec<Step>)> {
    let abs = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            host.cwd.join(p)
        }
    };
    let config_path = args
        .run
        .config
        .as_deref()
        .map(abs)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG_PATH));
    let home = args.home.clone().unwrap_or_else(|| host.home.clone());
    let log_dir = launchd_log_dir(args.log_dir.as_deref(), cfg, &home);
    let spec = PlistSpec {
        variant: args.variant,
        label: args.label.clone(),
        user: host.user.clone(),
        home,
        binary: args
            .binary
            .clone()
            .unwrap_or_else(|| host.current_exe.clone()),
        args: vec![
            "--config".into(),
            config_path.to_string_lossy().into_owned(),
        ],
        log_dir: log_dir.clone(),
        tart_home: None,
        exit_timeout_secs: args.exit_timeout,
        throttle_secs: args.throttle_interval,
    };
    let text = plist::render(&spec).context("cannot generate the launchd plist")?;
    let dir = args
        .job
        .plist_dir
        .clone()
        .unwrap_or_else(|| default_plist_dir(args.variant));
    let steps = launchctl::install_plan(&InstallPlanInput {
        domain: domain(args.variant, host.uid)?,
        label: args.label.clone(),
        plist_path: dir.join(spec.file_name()),
        plist: text,
        log_dir,
        user: host.user.clone(),
        wait: Duration::from_secs(args.job.wait_timeout),
    });
    Ok((spec, steps))
}

/// Resolves the console user: `--user`, else the owner of /dev/console on macOS, else
/// `$SUDO_USER`, else the current user. A `--user` unknown to this system is accepted when
/// `--home` is given too (a dry run prepared elsewhere); then there is no uid.
fn host_facts(user: Option<&str>, home: Option<&Path>) -> anyhow::Result<HostFacts> {
    use nix::unistd::{Uid, User};
    let by_name = |n: &str| -> anyhow::Result<Option<User>> {
        User::from_name(n).with_context(|| format!("cannot look up user {n:?}"))
    };
    let u = match user {
        Some(n) => match (by_name(n)?, home) {
            (Some(u), _) => Some(u),
            (None, Some(_)) => None,
            (None, None) => bail!("no such user {n:?}: pass an existing --user (or --home too)"),
        },
        None => {
            let console = if cfg!(target_os = "macos") {
                use std::os::unix::fs::MetadataExt as _;
                std::fs::metadata("/dev/console")
                    .ok()
                    .map(|m| m.uid())
                    .filter(|uid| *uid != 0)
            } else {
                None
            };
            Some(match (console, std::env::var("SUDO_USER").ok()) {
                (Some(uid), _) => User::from_uid(Uid::from_raw(uid))?
                    .context("the console owner has no user entry; pass --user")?,
                (None, Some(n)) => by_name(&n)?.with_context(|| format!("no such user {n:?}"))?,
                (None, None) => User::from_uid(Uid::current())?
                    .context("the current user has no user entry; pass --user")?,
            })
        }
    };
    let home = match (home, &u) {
        (Some(h), _) => h.to_path_buf(),
        (None, Some(u)) => u.dir.clone(),
        (None, None) => bail!("pass --home"),
    };
    Ok(HostFacts {
        home,
        user: u
            .as_ref()
            .map(|u| u.name.clone())
            .or_else(|| user.map(str::to_string))
            .unwrap_or_default(),
        uid: u.as_ref().map(|u| u.uid.as_raw()),
        current_exe: std::env::current_exe()
            .context("cannot find this executable; pass --binary")?,
        cwd: std::env::current_dir().context("cannot read the working directory")?,
    })
}

/// `tart-kubelet install`.
///
/// # Errors
/// Anything that stops the install; the plan printed so far says how far it got.
pub(crate) async fn install(args: &InstallArgs, cfg: &Config) -> anyhow::Result<ExitCode> {
    let cfg = &super::effective_config(&args.run, cfg)?;
    let host = host_facts(args.user.as_deref(), args.home.as_deref())?;
    let (spec, steps) = resolve_install(args, cfg, &host)?;
    if args.job.dry_run {
        print!(
            "# tart-kubelet install --dry-run: nothing was changed. Plan:\n{}",
            launchctl::render_plan(&steps)
        );
        return Ok(ExitCode::SUCCESS);
    }
    preflight(&args.job.launchctl)?;
    let config_file = &spec.args[1];
    if !Path::new(config_file).is_file() {
        bail!(
            "config file {config_file} does not exist: write it first (packaging/config.example.toml) or pass --config"
        );
    }
    execute(&steps, &args.job.launchctl).await?;
    println!("installed {} ({})", spec.label, spec.variant.as_str());
    Ok(ExitCode::SUCCESS)
}

/// `tart-kubelet uninstall`.
///
/// # Errors
/// Anything that stops the uninstall; a purge that would remove something not the agent's is
/// refused before anything is changed.
pub(crate) async fn uninstall(args: &UninstallArgs, _cfg: &Config) -> anyhow::Result<ExitCode> {
    let purge = args.purge.then(|| purge_plan(args)).transpose()?;
    let uid = match args.variant {
        Variant::Daemon => None,
        Variant::Agent => host_facts(args.user.as_deref(), None)?.uid,
    };
    let dir = args
        .job
        .plist_dir
        .clone()
        .unwrap_or_else(|| default_plist_dir(args.variant));
    let steps = launchctl::uninstall_plan(
        &domain(args.variant, uid)?,
        &args.label,
        dir.join(format!("{}.plist", args.label)),
        Duration::from_secs(args.job.wait_timeout),
    );
    if args.job.dry_run {
        print!(
            "# tart-kubelet uninstall --dry-run: nothing was changed. Plan:\n{}",
            launchctl::render_plan(&steps)
        );
        if let Some((plan, cfg)) = &purge {
            print!("{}", purge::render(plan, &cfg.tart_home));
        }
        return Ok(ExitCode::SUCCESS);
    }
    preflight(&args.job.launchctl)?;
    execute(&steps, &args.job.launchctl).await?;
    println!("uninstalled {}", args.label);
    if let Some((plan, cfg)) = &purge {
        purge::purge(plan, cfg).await?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The configuration `uninstall --purge` works from (its own `--config`, else the installed
/// one), resolved against the agent user's home, and the purge it decides.
fn purge_plan(args: &UninstallArgs) -> anyhow::Result<(purge::PurgePlan, Config)> {
    let facts = host_facts(args.user.as_deref(), args.home.as_deref())?;
    let mut run = args.run.clone();
    if run.config.is_none() {
        let installed = Path::new(DEFAULT_CONFIG_PATH);
        if !installed.is_file() {
            bail!(
                "uninstall --purge removes the paths the agent's configuration names: pass --config (no {DEFAULT_CONFIG_PATH})"
            );
        }
        run.config = Some(installed.to_path_buf());
    }
    let host = HostDefaults {
        home: facts.home.clone(),
        ..HostDefaults::detect()
    };
    let cfg = Config::load(run.clone(), &host)?;
    let log_dir = launchd_log_dir(args.log_dir.as_deref(), &cfg, &facts.home);
    let config_file = run.config.as_deref().map(|f| facts.cwd.join(f));
    let plan = purge::plan(&purge::PurgeInput {
        cfg: &cfg,
        home: &facts.home,
        config_file: config_file.as_deref(),
        launchd_log_dir: &log_dir,
        images: args.purge_images,
    })?;
    Ok((plan, cfg))
}

fn preflight(launchctl: &Path) -> anyhow::Result<()> {
    if !cfg!(target_os = "macos") && launchctl == Path::new(launchctl::LAUNCHCTL) {
        bail!("install/uninstall need macOS's launchctl; on this system only --dry-run works");
    }
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "install/uninstall write to /Library and run launchctl in the system domain: run with sudo"
        );
    }
    Ok(())
}

// === execution ===

/// Output of one launchctl call.
struct Out {
    ok: bool,
    text: String,
}

async fn launchctl_call(prog: &Path, args: &[&str]) -> anyhow::Result<Out> {
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .kill_on_drop(true)
        .stdin(std::process::Stdio::null());
    let out = timeout(LAUNCHCTL_DEADLINE, cmd.output())
        .await
        .with_context(|| {
            format!(
                "launchctl {} timed out after {LAUNCHCTL_DEADLINE:?}",
                args.join(" ")
            )
        })?
        .with_context(|| format!("cannot run {}", prog.display()))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    tracing::debug!(cmd = %args.join(" "), ok = out.status.success(), "launchctl");
    Ok(Out {
        ok: out.status.success(),
        text,
    })
}

async fn execute(steps: &[Step], prog: &Path) -> anyhow::Result<()> {
    for step in steps {
        run_step(step, prog).await?;
    }
    Ok(())
}

async fn run_step(step: &Step, prog: &Path) -> anyhow::Result<()> {
    match step {
        Step::CreateDir { path, owner } => {
            tokio::fs::create_dir_all(path)
                .await
                .with_context(|| format!("cannot create {}", path.display()))?;
            let u = nix::unistd::User::from_name(owner)?
                .with_context(|| format!("no such user {owner:?}"))?;
            nix::unistd::chown(path, Some(u.uid), Some(u.gid))
                .with_context(|| format!("cannot chown {} to {owner}", path.display()))?;
        }
        Step::WriteFile {
            path,
            mode,
            contents,
        } => write_root_file(path, *mode, contents).await?,
        Step::RemoveFile { path } => match tokio::fs::remove_file(path).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", path.display())),
        },
        Step::BootoutIfLoaded { service } => {
            if launchctl_call(prog, &["print", service]).await?.ok {
                let out = launchctl_call(prog, &["bootout", service]).await?;
                // "No such process" (3) means it went away between print and bootout.
                if !out.ok && launchctl_call(prog, &["print", service]).await?.ok {
                    bail!("launchctl bootout {service} failed: {}", out.text.trim());
                }
            }
        }
        Step::WaitGone { service, deadline } => {
            poll(*deadline, "to be gone after bootout", service, || async {
                Ok(!launchctl_call(prog, &["print", service]).await?.ok)
            })
            .await?;
        }
        Step::Enable { service } => {
            let out = launchctl_call(prog, &["enable", service]).await?;
            if !out.ok {
                bail!("launchctl enable {service} failed: {}", out.text.trim());
            }
        }
        Step::Bootstrap { domain, plist } => {
            let p = plist.to_string_lossy();
            let out = launchctl_call(prog, &["bootstrap", domain, &p]).await?;
            if !out.ok {
                bail!(
                    "launchctl bootstrap {domain} {p} failed: {} (125 = no GUI session for gui/<uid>; 5 = still loaded or bad plist: check `plutil -lint {p}`)",
                    out.text.trim()
                );
            }
        }
        Step::WaitRunning { service, deadline } => {
            poll(
                *deadline,
                "to report a pid after bootstrap",
                service,
                || async {
                    let out = launchctl_call(prog, &["print", service]).await?;
                    Ok(out.ok && launchctl::parse_print(&out.text).pid.is_some())
                },
            )
            .await?;
        }
    }
    Ok(())
}

async fn poll<F, Fut>(
    deadline: Duration,
    what: &str,
    service: &str,
    mut done: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let end = Instant::now() + deadline;
    loop {
        if done().await? {
            return Ok(());
        }
        if Instant::now() >= end {
            bail!("timed out after {deadline:?} waiting for {service} {what}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Temp file in the same directory, mode and root ownership set, then rename: launchd never
/// sees a half-written plist, and ignores plists with wrong ownership or permissions.
async fn write_root_file(path: &Path, mode: u32, contents: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = path.parent().context("plist path has no directory")?;
    tokio::fs::create_dir_all(dir)
        .await
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = path.with_extension("plist.tmp");
    tokio::fs::write(&tmp, contents)
        .await
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    tokio::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)).await?;
    nix::unistd::chown(&tmp, Some(0.into()), Some(0.into()))
        .with_context(|| format!("cannot chown {} to root:wheel", tmp.display()))?;
    tokio::fs::rename(&tmp, path)
        .await
        .with_context(|| format!("cannot move {} into place", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests;
