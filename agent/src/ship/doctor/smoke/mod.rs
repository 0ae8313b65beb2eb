//! `tart-kubelet doctor --smoke IMAGE`: the first-day self-test of a Mac, with no cluster.
//! It clones IMAGE into a VM of its own (`<vm-name-prefix>smoke-<random>`), sets it, writes
//! the guest's shares with a fixed command, boots it as the Pod worker does, waits for a guest
//! launcher (delivering it as the worker does under `--guest-launcher`), checks an `exec` and
//! the command's output and exit code as the agent reads them, then stops and deletes the
//! VM and its guest directory — always, after a failure or Ctrl-C too. It touches nothing it
//! did not create, except that a pulled image stays in Tart's cache.
//!
//! Pure: [`steps`] (the steps, the fixed command, the checks, the verdict) and [`table`] (the
//! report). I/O: [`run`] (the steps through the tart driver) over [`guest`] (the guest
//! contract's files) and [`launcher`] (the wait for a launcher). docs/operations.md, "First-day self-test", is the operator's page.

use std::{future::Future, process::ExitCode, sync::Arc, time::Duration};

use tart::Tart;
use tokio::sync::watch;

use crate::config::Config;
use crate::pods::worker::WorkerConfig;
use crate::ship::DoctorArgs;

pub(crate) mod guest;
pub(crate) mod launcher;
pub(crate) mod run;
pub(crate) mod steps;
pub(crate) mod table;

use steps::Verdict;

/// Run the self-test of `image` with the tart driver `tart`, built from `cfg`; `interrupt`
/// completes on Ctrl-C or SIGTERM, which skips to the clean-up. Prints the table (or JSON
/// lines with `--json`) on stdout, a line per step on stderr as it ends, and returns exit 0
/// (passed), 1 (a step failed: the last line names the first) or 130 (interrupted).
///
/// # Errors
/// The self-test's VM name cannot be formed from `--vm-name-prefix`.
pub(crate) async fn smoke<T: Tart>(
    args: &DoctorArgs,
    image: &str,
    cfg: &Config,
    tart: Arc<T>,
    interrupt: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<ExitCode> {
    let suffix = format!("{:08x}", rand::random::<u32>());
    let vm = steps::vm_name(cfg.vm_naming.prefix(), &suffix)
        .map_err(|e| anyhow::anyhow!("cannot name the self-test's VM: {e}"))?;
    // The Pod worker's own settings: the same guest directories and `tart run` options. The
    // host IP only feeds a Pod's downward API, which the self-test's guest does not use.
    let worker = WorkerConfig::from_config(cfg, "");
    let settings = run::Settings {
        image: image.to_owned(),
        marker: format!("/tmp/{vm}.smoke"),
        layout: worker.guest.layout.clone(),
        run_opts: worker.run_opts(&vm),
        ip_wait: cfg.ip_wait,
        launcher: worker.launcher,
        guest_timeout: Duration::from_secs(args.smoke_timeout.max(1)),
        stop_grace: cfg.default_termination_grace,
        vm,
    };
    eprintln!(
        "smoke test of {image} in VM {} (TART_HOME {})",
        settings.vm,
        cfg.tart_home.display()
    );
    let (tx, rx) = watch::channel(false);
    let signals = tokio::spawn(async move {
        interrupt.await;
        let _ = tx.send(true);
    });
    let progress = |r: &steps::Report| {
        eprintln!(
            "{}: {} ({})",
            r.step.as_str(),
            r.outcome.as_str(),
            table::duration(r.took)
        );
    };
    let reports = run::run(tart, settings, rx, progress).await;
    signals.abort();
    let verdict = Verdict::of(&reports);
    if args.json {
        print!("{}", table::json_lines(&reports));
        eprintln!("{}", verdict.summary());
    } else {
        print!("{}", table::render(&reports));
        println!("{}", verdict.summary());
    }
    Ok(ExitCode::from(verdict.exit_code()))
}

#[cfg(test)]
mod tests;
