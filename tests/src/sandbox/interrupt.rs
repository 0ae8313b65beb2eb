//! Ctrl-C and SIGTERM for the sandbox: counted, not fatal, so whatever was started is stopped.
//!
//! The first interrupt ends the phase in progress (start-up or workload) and begins the normal
//! teardown: the agents delete the Pods and their VMs, then everything is stopped. A second
//! interrupt cuts the teardown short: VMs and agents are killed, the control plane stopped.
//! The agents run in process groups of their own (`tests/src/agent/mod.rs`), so a terminal's
//! Ctrl-C reaches only the sandbox and the agents are still there to tear down.

use tokio::sync::watch;

/// Interrupts received so far.
#[derive(Clone)]
pub struct Interrupts {
    rx: watch::Receiver<u32>,
}

impl Interrupts {
    /// Start counting SIGINT and SIGTERM. From here on neither ends the process by itself.
    ///
    /// # Errors
    /// When the signal handlers cannot be installed.
    pub fn listen() -> std::io::Result<Interrupts> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        let (tx, rx) = watch::channel(0u32);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
                tx.send_modify(|n| *n += 1);
                let n = *tx.borrow();
                if n == 1 {
                    eprintln!(
                        "\ninterrupted: stopping the workload and tearing down (again to skip the teardown)"
                    );
                } else {
                    eprintln!(
                        "\ninterrupted again: killing VMs and agents, stopping the control plane"
                    );
                }
            }
        });
        Ok(Interrupts { rx })
    }

    /// How many so far.
    pub fn count(&self) -> u32 {
        *self.rx.borrow()
    }

    /// Resolves once `n` interrupts have arrived (at once if they already have).
    pub async fn reached(&self, n: u32) {
        let mut rx = self.rx.clone();
        if rx.wait_for(|c| *c >= n).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
