//! `exec` as a real process (VM knob `real_exec`, implied by `guest_launcher`): the words after
//! the VM name are spawned on the host the way the Tart Guest Agent spawns them in the guest
//! (`exec.CommandContext`, docs/reference/tart-cli.md §2.10) — no shell, a `PATH` lookup, stdin
//! only with `-i` (otherwise `/dev/null`), stdout and stderr straight through — in the VM's fake
//! guest root `<vm dir>/guest`, and `exec` exits with the command's code. The guest launcher's
//! installed path runs this repository's launcher with the same `TART_GUEST_ROOT` as `run` gives
//! it, as an image with the launcher baked in would. Every command runs as the exec user
//! `admin` (by its environment: `USER`, `LOGNAME`, `HOME`), with `TART_GUEST_ROOT` set and the
//! guest's `sudo` and `launchctl` ([`crate::guest_launchd`]) first on its `PATH`.
//!
//! The command stays in `exec`'s process group, so a kill of that group ends both. It also gets
//! SIGKILL when the `exec` process dies of anything (SIGINT, SIGTERM, a SIGKILL of the PID
//! alone), as the agent kills the command when the call's stream breaks; and when the VM stops
//! under it, `exec` kills it and fails the way the broken connection does.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::Command;
use tokio::time::interval;

use crate::Ctx;
use crate::error::Failure;
use crate::locks;

/// Where an image installs the guest launcher (docs/guest.md).
const INSTALLED_LAUNCHER: &str = "/usr/local/libexec/tart-guest/tart-guest-launcher";

/// Who the guest agent runs commands as in Cirrus Labs' images.
const EXEC_USER: &str = "admin";

/// How often `exec` checks that the VM still runs.
const VM_CHECK: Duration = Duration::from_millis(50);

/// Runs `argv` in the guest root of VM `name`; returns the exit code `tart exec` reports.
pub(crate) async fn run(
    ctx: &Ctx,
    name: &str,
    argv: &[String],
    stdin: bool,
) -> Result<i32, Failure> {
    let Some((prog, args)) = argv.split_first() else {
        return Ok(0);
    };
    let vm_dir = ctx.home.vm_dir(name);
    let root = vm_dir.join("guest");
    std::fs::create_dir_all(&root)?;
    // The guest's tools first on the PATH: `sudo` and `launchctl` (`guest_launchd`).
    let bin = vm_dir.join("guest-bin");
    crate::guest_launchd::install(&ctx.home.root, &bin, name)?;
    let mut path = vec![bin];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(path).map_err(io::Error::other)?;
    let mut cmd = if prog == INSTALLED_LAUNCHER {
        let mut c = Command::new("/bin/sh");
        c.arg(crate::guest_mode::launcher_path())
            .env("TART_GUEST_ROOT", &root);
        c
    } else {
        Command::new(prog)
    };
    // The guest agent runs commands as the logged-in user, `admin` (docs/guest.md); the fake
    // models the user by its environment. TART_GUEST_ROOT is the fake guest's `/` for the
    // programs that honour it (the launcher, the agent's installer).
    cmd.args(args)
        .env("USER", EXEC_USER)
        .env("LOGNAME", EXEC_USER)
        .env("HOME", root.join("Users").join(EXEC_USER))
        .env("PATH", path)
        .env("TART_GUEST_ROOT", &root)
        .current_dir(&root)
        .stdin(if stdin {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    die_with_parent(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return Err(Failure::other(spawn_error(prog, &e))),
    };
    let config = ctx.home.config_path(name);
    let mut check = interval(VM_CHECK);
    loop {
        tokio::select! {
            status = child.wait() => return Ok(exit_code(status?)),
            _ = check.tick() => {
                if locks::lock_holder(&config).is_none() {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    return Err(Failure::other(VM_GONE));
                }
            }
        }
    }
}

/// What `tart exec` prints when the VM powers off under a running command: the call's
/// connection drops (grpc-swift's status for a closed transport).
const VM_GONE: &str = "unavailable (14): Transport became inactive";

/// The agent's failure to start a command, as `tart exec` prints it after `Error: `: the Go
/// error of `exec.Command(...).Start()` inside a gRPC `unknown` status. A bare name is looked
/// up in `PATH`, which skips files that are not executable.
fn spawn_error(prog: &str, e: &io::Error) -> String {
    let lookup = !prog.contains('/')
        && matches!(
            e.kind(),
            io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied
        );
    if lookup {
        return format!("unknown (2): exec: \"{prog}\": executable file not found in $PATH");
    }
    let reason = e
        .raw_os_error()
        .map(|n| nix::errno::Errno::from_raw(n).desc().to_lowercase())
        .unwrap_or_else(|| e.to_string());
    format!("unknown (2): fork/exec {prog}: {reason}")
}

/// The guest command's exit code; a command killed by a signal has none, which the agent
/// reports as -1 and `tart exec` turns into exit status 255.
fn exit_code(status: ExitStatus) -> i32 {
    status.code().unwrap_or(255)
}

/// Asks the kernel to SIGKILL the command when this process dies.
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe
    // functions (prctl, getppid, _exit). If the parent died before prctl took effect, the
    // child is already orphaned and must not run the command.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                libc::_exit(137);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests;
