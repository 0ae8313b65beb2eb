//! The life of a VM: `run` (docs/reference/tart-cli.md §2.6, §3.2: config.json fcntl lock for life,
//! foreground, SIGINT/SIGUSR1/SIGUSR2 handling, guest exit and crash), `stop` (the
//! docs/reference/tart-cli.md §2.7 algorithm) and `suspend` (docs/reference/tart-cli.md §2.8).
//! While the VM runs and has booted, `run` also serves the guest's endpoints (`endpoints.rs`). The
//! run record `.fake-run.json` (start time, PID, argv) is a separate file, so `run` never reopens
//! its locked `config.json` (docs/reference/tart-cli.md §8); `guest.rs` reads it.

use std::collections::BTreeMap;
use std::fs;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::{Instant, sleep, sleep_until};

use crate::Ctx;
use crate::cli::Parsed;
use crate::dirs::{self, Share};
use crate::endpoints::Endpoints;
use crate::error::Failure;
use crate::guest_launchd::Request;
use crate::home::{self, VmConfig};
use crate::info::vm_state;
use crate::knobs::{
    Action, DEFAULT_BOOT_MS, DEFAULT_SHUTDOWN_MS, EndpointState, Knobs, SoftnetSetup,
    default_bridge_interfaces,
};
use crate::locks;
use crate::net::{self, RunNet};
use crate::time::now_ms;

/// Written by `run` once it holds the lock: what `ip` and `exec` need to simulate the boot.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub pid: u32,
    pub started_at_ms: u64,
    pub suspendable: bool,
    pub args: Vec<String>,
    /// The parsed `--dir` shares (docs/reference/tart-cli.md §2.6), so tests and the guest mode see
    /// them.
    #[serde(default)]
    pub shares: Vec<Share>,
}

const RUN_RECORD: &str = ".fake-run.json";

pub(crate) fn read_record(ctx: &Ctx, name: &str) -> Option<RunRecord> {
    let bytes = fs::read(ctx.home.vm_dir(name).join(RUN_RECORD)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The network the VM's running `tart run` asked for, from its recorded argv (`Shared` when
/// there is no record).
pub(crate) fn running_net(ctx: &Ctx, name: &str) -> RunNet {
    let Some(record) = read_record(ctx, name) else {
        return RunNet::Shared;
    };
    let args = record.args.get(1..).unwrap_or_default();
    crate::cli::spec("run")
        .and_then(|spec| crate::cli::parse(spec, args).ok())
        .map_or(RunNet::Shared, |p| RunNet::of(&p))
}

/// Simulated time from `run` start until the guest has an IP and its agent answers.
fn boot_delay_ms(knobs: &Knobs, name: &str) -> u64 {
    let boot = knobs.boot_ms.unwrap_or(DEFAULT_BOOT_MS);
    knobs.scaled_ms(knobs.vm(name).ip_delay_ms.unwrap_or(boot))
}

pub(crate) fn booted(ctx: &Ctx, knobs: &Knobs, name: &str) -> bool {
    read_record(ctx, name).is_some_and(|r| now_ms() >= r.started_at_ms + boot_delay_ms(knobs, name))
}

fn others_running(ctx: &Ctx, name: &str) -> Vec<String> {
    ctx.home
        .local_vms()
        .into_iter()
        .filter(|n| n != name && vm_state(&ctx.home, n) == "running")
        .collect()
}

/// The signals `run` handles (docs/reference/tart-cli.md §3.2), registered before the run record
/// says "up", so a signal sent as soon as the VM shows as running never meets the default action.
struct RunSignals {
    int: UnixSignal,
    usr1: UnixSignal,
    usr2: UnixSignal,
    /// Private channel: `exec <vm> shutdown` in the fake guest sends SIGURG (ignored by
    /// default, so harmless if anything else sends it).
    urg: UnixSignal,
}

type UnixSignal = tokio::signal::unix::Signal;

impl RunSignals {
    fn register() -> std::io::Result<RunSignals> {
        Ok(RunSignals {
            int: signal(SignalKind::interrupt())?,
            usr1: signal(SignalKind::user_defined1())?,
            usr2: signal(SignalKind::user_defined2())?,
            urg: signal(SignalKind::from_raw(libc::SIGURG))?,
        })
    }
}

pub(crate) async fn run(
    ctx: &Ctx,
    p: &Parsed,
    action: Option<Action>,
    argv: &[String],
) -> Result<(), Failure> {
    let name = p.positionals[0].clone();
    let signals = RunSignals::register()?;
    // Tart's validate() checks the flags first, then opens the VM (a missing one is E4 with the
    // prefix and exit 1, docs/reference/tart-cli.md §1.3), then looks at the disks.
    let net = net::validate(p)?;
    if !ctx.home.vm_exists(&name) {
        return Err(Failure::other(format!(
            "the specified VM \"{name}\" does not exist"
        )));
    }
    net::validate_disks(p)?;
    let shares = dirs::parse_all(p.opts("dir"), &std::env::current_dir().unwrap_or_default())?;
    let dir = ctx.home.vm_dir(&name);
    let config = ctx.home.config_path(&name);
    home::touch_accessed(&dir)?;
    // Blocking flock on $TART_HOME from here until the config lock is taken
    // (docs/reference/tart-cli.md §2.6).
    let home_lock = locks::flock(&ctx.home.root).await?;
    // All reads of config.json happen BEFORE the lock: closing any fd of it would drop the lock.
    let mut cfg = VmConfig::read(&config)?;
    let mac_taken = others_running(ctx, &name).iter().any(|n| {
        VmConfig::read(&ctx.home.config_path(n))
            .is_ok_and(|c| c.mac_address.eq_ignore_ascii_case(&cfg.mac_address))
    });
    if mac_taken {
        println!("There is already a running VM with the same MAC address!");
        println!("Resetting VM to assign a new MAC address...");
        cfg.mac_address = home::random_mac();
        cfg.write(&config)?;
        let _ = fs::remove_file(dir.join("state.vzvmsave"));
    }
    // Building the VM: its network, then the root disk's modes (docs/reference/tart-cli.md §2.6).
    let interfaces = ctx
        .knobs
        .bridge_interfaces
        .clone()
        .unwrap_or_else(default_bridge_interfaces);
    net::build(&net, p, ctx.knobs.softnet.unwrap_or_default(), &interfaces)?;
    net::root_disk(p.opt("root-disk-opts"))?;
    let Some(lock) = locks::try_lock_config(&config)? else {
        return Err(Failure::runtime(
            format!("VM \"{name}\" is already running!"),
            2,
        ));
    };
    drop(home_lock);
    let record = RunRecord {
        pid: std::process::id(),
        started_at_ms: now_ms(),
        suspendable: p.flag("suspendable"),
        args: argv.to_vec(),
        shares,
    };
    crate::rules::write_atomic(
        &dir.join(RUN_RECORD),
        &serde_json::to_vec_pretty(&record).unwrap_or_default(),
    )?;
    let ip = home::loopback_ip_for_mac(&ctx.home.root, &cfg.mac_address);
    let result = supervise(ctx, &name, &net, action, signals, Endpoints::new(ip, &name)).await;
    let _ = fs::remove_file(dir.join(RUN_RECORD));
    drop(lock);
    result
}

/// The ports the guest serves now: its `endpoints` knob once it has booted, none before.
fn wanted_endpoints(ctx: &Ctx, knobs: &Knobs, name: &str) -> BTreeMap<u16, EndpointState> {
    match knobs.vm(name).endpoints {
        Some(ports) if booted(ctx, knobs, name) => ports,
        _ => BTreeMap::new(),
    }
}

/// Start failures after the lock, then the foreground wait for whatever ends the VM, serving
/// the guest's `endpoints` meanwhile.
async fn supervise(
    ctx: &Ctx,
    name: &str,
    net: &RunNet,
    action: Option<Action>,
    signals: RunSignals,
    mut endpoints: Endpoints,
) -> Result<(), Failure> {
    let others = others_running(ctx, name);
    let over_limit = ctx
        .knobs
        .max_running_vms
        .is_some_and(|max| others.len() >= max);
    if matches!(action, Some(Action::VmLimit(true))) || over_limit {
        let hint = if others.is_empty() {
            String::new()
        } else {
            format!(" (other running VMs: {})", others.join(", "))
        };
        return Err(Failure::runtime(
            format!("The number of VMs exceeds the system limit{hint}"),
            1,
        ));
    }
    if matches!(action, Some(Action::AuxStorageLocked(true))) {
        // docs/reference/tart-cli.md §2.6: a VM that fails to start is printed as `"\(error)"`,
        // without the `Error: ` prefix of other thrown errors.
        return Err(Failure::runtime(
            "Error Domain=VZErrorDomain Code=2 \"Failed to lock auxiliary storage.\" UserInfo={NSLocalizedFailure=Failed to lock auxiliary storage.}",
            1,
        ));
    }
    if net.uses_softnet() && ctx.knobs.softnet == Some(SoftnetSetup::NotSetuid) {
        // Softnet starts with the VM and exits at once when it cannot become root; Tart then
        // fails (docs/reference/tart-cli.md §3.3, #358).
        let (softnet_line, failure) = net::softnet_died();
        eprintln!("{softnet_line}");
        return Err(failure);
    }
    let dir = ctx.home.vm_dir(name);
    let snapshot = dir.join("state.vzvmsave");
    if snapshot.exists() {
        println!("restoring VM state from a snapshot...");
        println!("resuming VM...");
        let _ = fs::remove_file(&snapshot);
    }
    let record = read_record(ctx, name);
    let mut guest = match &record {
        Some(r) => boot_guest(ctx, &dir, name, &r.shares)?,
        None => None,
    };
    let record_shares = record.as_ref().map(|r| r.shares.clone());
    let suspendable = record.as_ref().is_some_and(|r| r.suspendable);
    let softnet = record.is_some_and(|r| r.args.iter().any(|a| a.starts_with("--net-softnet")));
    if softnet && crate::info::version_tuple(&ctx.version()) >= (2, 34, 0) {
        // #1323 (2.34.0 through at least 2.36.0): softnet closes tart's stdout once the VM
        // starts, so every later stdout line is lost (docs/reference/tart-cli.md §2.6, output
        // caveats).
        use std::io::Write;
        let _ = std::io::stdout().flush();
        if let Ok(null) = fs::OpenOptions::new().write(true).open("/dev/null") {
            let _ = nix::unistd::dup2_stdout(&null);
        }
    }
    let RunSignals {
        int: mut sigint,
        usr1: mut sigusr1,
        usr2: mut sigusr2,
        urg: mut sigurg,
    } = signals;
    let start = Instant::now();
    let mut knobs = ctx.knobs.clone();
    let mut shutdown_at: Option<Instant> = None;
    // Often enough that a test flipping an endpoint sees the change within ~100 ms.
    let mut reload = tokio::time::interval(Duration::from_millis(50));
    loop {
        let vmk = knobs.vm(name);
        let guest_exit_at = vmk
            .guest_exit_after_ms
            .map(|ms| start + Duration::from_millis(knobs.scaled_ms(ms)));
        let deadline = match (guest_exit_at, shutdown_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let shutdown_ms = knobs.scaled_ms(vmk.shutdown_ms.unwrap_or(DEFAULT_SHUTDOWN_MS));
        tokio::select! {
            _ = sigint.recv() => {
                if !crate::rules::load(&ctx.home).unwrap_or(knobs.clone()).vm(name).ignore_sigint.unwrap_or(false) {
                    println!("Stopping VM...");
                    return Ok(());
                }
            }
            _ = sigusr2.recv() => {
                println!("Requesting guest OS to stop...");
                let fresh = crate::rules::load(&ctx.home).unwrap_or(knobs.clone());
                if !fresh.vm(name).ignore_sigusr2.unwrap_or(false) && shutdown_at.is_none() {
                    shutdown_at = Some(Instant::now() + Duration::from_millis(shutdown_ms));
                }
            }
            _ = async { guest.as_mut().map(|g| g.launcher.wait()).expect("guarded").await }, if guest.is_some() => {
                // The launcher ends by powering the guest off (docs/guest.md), except when it
                // had nothing to run: then the guest keeps running what the image starts.
                guest = None;
                let idle = status_state(record_shares.as_deref()).as_deref() == Some("idle");
                let fresh = crate::rules::load(&ctx.home).unwrap_or(knobs.clone());
                let status = status_dir(record_shares.as_deref());
                if let (Some(attack), Some(status)) = (fresh.vm(name).guest_attack, status) {
                    crate::guest_attack::play(&status, &attack)?;
                }
                if shutdown_at.is_none() && !idle {
                    shutdown_at = Some(Instant::now() + Duration::from_millis(shutdown_ms));
                }
            }
            _ = sigurg.recv() => {
                if shutdown_at.is_none() {
                    shutdown_at = Some(Instant::now() + Duration::from_millis(shutdown_ms));
                }
            }
            _ = sigusr1.recv() => {
                if suspendable {
                    println!("pausing VM to take a snapshot...");
                    println!("creating a snapshot...");
                    fs::write(&snapshot, b"fake snapshot")?;
                    println!("snapshot created successfully! shutting down the VM...");
                    return Ok(());
                }
                println!("Failed to suspend the VM: Invalid virtual machine configuration. Unsupported console device.");
                return Err(Failure::Exit(1));
            }
            _ = sleep_until(deadline.unwrap_or(start)), if deadline.is_some() => {
                let code = if shutdown_at.is_some_and(|s| Some(s) == deadline) { 0 } else { vmk.guest_exit_code.unwrap_or(0) };
                if code == 0 {
                    println!("guest has stopped the virtual machine");
                    return Ok(());
                }
                println!("guest has stopped the virtual machine due to error: Error Domain=VZErrorDomain Code=1 \"The virtual machine stopped unexpectedly.\"");
                return Err(Failure::Exit(code));
            }
            _ = reload.tick() => {
                // A VM whose home was deleted (a finished test) powers off instead of leaking.
                if !dir.exists() {
                    return Err(Failure::Exit(137));
                }
                if let Ok(k) = crate::rules::load(&ctx.home) {
                    knobs = k;
                }
                endpoints.apply(&wanted_endpoints(ctx, &knobs, name));
                match crate::guest_launchd::take_request(&dir) {
                    Some(Request::Load) if guest.is_none() => {
                        let launcher = dir.join("guest").join(crate::guest_launchd::LAUNCHER);
                        guest = Some(crate::guest_mode::start(&ctx.home.root, &dir, name, &launcher)?);
                    }
                    Some(Request::Unload) => guest = None,
                    _ => {}
                }
            }
        }
    }
}

pub(crate) async fn stop(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    let name = &p.positionals[0];
    let timeout: u64 = p.num("stop", "timeout")?.unwrap_or(30);
    if !ctx.home.vm_exists(name) {
        return Err(Failure::not_found(name));
    }
    let dir = ctx.home.vm_dir(name);
    home::touch_accessed(&dir)?;
    match vm_state(&ctx.home, name) {
        "suspended" => {
            fs::remove_file(dir.join("state.vzvmsave"))?;
            return Ok(());
        }
        "stopped" => return Err(Failure::not_running(name)),
        _ => {}
    }
    let config = ctx.home.config_path(name);
    let Some(pid) = locks::lock_holder(&config) else {
        return Err(Failure::not_running(name));
    };
    let pid = Pid::from_raw(pid);
    let _ = kill(pid, Signal::SIGINT);
    // Poll the lock every 100 ms for up to --timeout seconds (docs/reference/tart-cli.md §2.7).
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        if locks::lock_holder(&config).is_none() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
    // SIGKILL and exit at once, without waiting for the process to die.
    kill(pid, Signal::SIGKILL).map_err(|e| {
        Failure::runtime(
            format!("failed to forcefully terminate the VM \"{name}\": {e}"),
            1,
        )
    })
}

pub(crate) fn suspend(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    let name = &p.positionals[0];
    if !ctx.home.vm_exists(name) {
        return Err(Failure::not_found(name));
    }
    let Some(pid) = locks::lock_holder(&ctx.home.config_path(name)) else {
        // The double-wrapped message is a real Tart bug (docs/reference/tart-cli.md §2.8).
        return Err(Failure::runtime(
            format!("VM \"VM \"{name}\" is not running\" is not running"),
            2,
        ));
    };
    kill(Pid::from_raw(pid), Signal::SIGUSR1).map_err(|e| {
        Failure::runtime(
            format!("Failed to suspend the VM: failed to send SIGUSR1 to {pid}: {e}"),
            1,
        )
    })
}

/// The guest at boot, for a VM whose guest runs real processes (`guest_launcher` or
/// `real_exec`): its root laid out for `shares`, and the launcher started when the image has
/// one (`guest_launcher`: baked in) or a delivery installed one in an earlier run (its plist is
/// on the guest's disk), as launchd starts a LaunchDaemon at boot.
fn boot_guest(
    ctx: &Ctx,
    dir: &std::path::Path,
    name: &str,
    shares: &[crate::dirs::Share],
) -> Result<Option<crate::guest_mode::Guest>, Failure> {
    let vmk = ctx.knobs.vm(name);
    let baked = vmk.guest_launcher.unwrap_or(false);
    crate::guest_launchd::clear(dir);
    if !baked && !vmk.real_exec.unwrap_or(false) {
        return Ok(None);
    }
    crate::guest_mode::boot(dir, shares)?;
    let root = dir.join("guest");
    if baked {
        let (launcher, plist) = (
            crate::guest_mode::launcher_path(),
            crate::guest_mode::plist_path(),
        );
        crate::guest_launchd::bake(&root, &launcher, &plist)?;
    }
    if !root.join(crate::guest_launchd::PLIST).is_file() {
        return Ok(None);
    }
    crate::guest_launchd::mark_loaded(dir)?;
    let launcher = root.join(crate::guest_launchd::LAUNCHER);
    Ok(Some(crate::guest_mode::start(
        &ctx.home.root,
        dir,
        name,
        &launcher,
    )?))
}

/// The guest launcher's `state` in the `status` share, if there is one.
fn status_state(shares: Option<&[crate::dirs::Share]>) -> Option<String> {
    let state = fs::read_to_string(status_dir(shares)?.join("state")).ok()?;
    Some(state.trim().to_owned())
}

/// The host directory of the `status` share.
fn status_dir(shares: Option<&[crate::dirs::Share]>) -> Option<std::path::PathBuf> {
    let status = shares?
        .iter()
        .find(|s| s.name.as_deref() == Some("status"))?;
    Some(status.path.clone())
}
