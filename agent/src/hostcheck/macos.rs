//! The macOS side of the host checks: `launchctl print gui/<uid>` (GUI session),
//! `security show-keychain-info login.keychain` (keychain), bootpd's lease table, and the
//! softnet program's owner and mode. Each command runs on a blocking thread with a deadline;
//! a command that times out or cannot start leaves its check unchecked.

use std::{path::Path, time::Duration};

use super::{Observed, leases, owner_and_mode};
use crate::macos::shell::{self, ShellError};

/// bootpd's lease table.
const LEASES: &str = "/var/db/dhcpd_leases";

async fn run(
    program: &'static str,
    args: Vec<String>,
    deadline: Duration,
) -> Option<Result<String, String>> {
    let r = tokio::task::spawn_blocking(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        shell::run(program, &a, deadline)
    })
    .await
    .ok()?;
    match r {
        Ok(out) => Some(Ok(out)),
        // It answered, unsuccessfully: that is a fact (no GUI domain, keychain locked).
        Err(e @ ShellError::Failed { .. }) => Some(Err(e.to_string())),
        Err(ShellError::Spawn { .. } | ShellError::Timeout { .. }) => None,
    }
}

/// One round of facts.
pub(super) async fn observe(softnet: Option<&Path>, deadline: Duration) -> Observed {
    let uid = nix::unistd::getuid().as_raw();
    let gui_session = run(
        "/bin/launchctl",
        vec!["print".into(), format!("gui/{uid}")],
        deadline,
    )
    .await
    .map(|r| {
        r.ok()
            .and_then(|t| crate::macos::launchctl::parse_domain_session(&t))
    });
    let keychain = run(
        "/usr/bin/security",
        vec!["show-keychain-info".into(), "login.keychain".into()],
        deadline,
    )
    .await
    .map(|r| r.map(|_| ()));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let dhcp_leases_used =
        match tokio::time::timeout(deadline, tokio::fs::read_to_string(LEASES)).await {
            Ok(Ok(t)) => Some(leases::active_leases(&t, now)),
            // No table yet: no VM has asked for an address.
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => Some(0),
            _ => None,
        };
    let softnet = softnet.map(|p| (p.display().to_string(), owner_and_mode(p)));
    Observed {
        gui_session,
        keychain,
        dhcp_leases_used,
        softnet,
    }
}
