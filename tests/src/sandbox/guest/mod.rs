//! The runner job as the guest runs it. The workload creates a Secret holding a random token;
//! every runner Pod gets it as `RUNNER_TOKEN` (`secretKeyRef`) and a `command` that plays the
//! CI job: it runs for the job's length, then exits 0 only if the token is the one the
//! sandbox created. fake-tart runs that command through the real guest launcher, which writes
//! its exit code to the VM's status share (`<guest dir>/<vm>/status/exit_code`, docs/guest.md);
//! the workload reads it when it first sees the Pod ended, before deleting the Pod (the agent
//! removes the VM's guest directory with the VM); in `fleet` the sandbox's Pod watch reads it
//! too, as soon as it sees the end. The token never appears in any argv: the
//! command gets its POSIX `cksum` and compares with a shell builtin's output piped to `cksum`.

use std::path::PathBuf;

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client, api::PostParams};
use rand::Rng;
use serde::Serialize;
use serde_json::json;

/// The Secret each runner Pod reads its token from.
pub const SECRET_NAME: &str = "runner-token";
/// The key in [`SECRET_NAME`] holding the token.
pub const SECRET_KEY: &str = "token";
/// The environment variable the job checks.
pub const ENV_NAME: &str = "RUNNER_TOKEN";
/// The job's exit code when the token is not the expected one.
pub const MISMATCH_EXIT: i32 = 3;

/// `$1`: seconds the job runs; `$2`: the expected `cksum` line of the token. `printf` is a
/// shell builtin, so the token reaches `cksum` through a pipe, never through argv. No `$(`:
/// the agent expands `$(NAME)` in a container's command (kubelet's rule).
const JOB_SCRIPT: &str = r#"sleep "$1"
if printf %s "$RUNNER_TOKEN" | cksum | grep -qx -- "$2"; then
  echo "job done: RUNNER_TOKEN matches"
else
  echo "RUNNER_TOKEN does not match" >&2
  exit 3
fi"#;

/// The token the workload's Secret holds.
#[derive(Clone)]
pub struct RunnerToken {
    value: String,
}

impl std::fmt::Debug for RunnerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunnerToken(..)")
    }
}

impl RunnerToken {
    /// 128 random bits, in hex.
    pub fn random() -> Self {
        let bits: u128 = rand::rng().random();
        Self {
            value: format!("{bits:032x}"),
        }
    }

    /// The `cksum` line of the token (`<crc> <length>`), which the job compares with.
    pub fn checksum(&self) -> String {
        cksum_line(self.value.as_bytes())
    }

    /// The Secret holding the token.
    pub fn secret(&self) -> Secret {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": { "name": SECRET_NAME },
            "stringData": { SECRET_KEY: self.value },
        }))
        .expect("static secret literal")
    }

    /// Creates the Secret in `ns`, or replaces one left by an earlier run.
    ///
    /// # Errors
    /// The API refusing either request.
    pub async fn store(&self, client: &Client, ns: &str) -> anyhow::Result<()> {
        let api: Api<Secret> = Api::namespaced(client.clone(), ns);
        match api.create(&PostParams::default(), &self.secret()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let mut s = api.get(SECRET_NAME).await?;
                s.data = None;
                s.string_data = self.secret().string_data;
                api.replace(SECRET_NAME, &PostParams::default(), &s).await?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// What a runner Pod's container runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// How long the job runs, seconds.
    pub seconds: f64,
    /// The expected token's `cksum` line.
    pub checksum: String,
}

impl Job {
    /// The container's `command`.
    pub fn command(&self) -> Vec<String> {
        vec![
            "/bin/sh".into(),
            "-c".into(),
            JOB_SCRIPT.into(),
            "job".into(),
        ]
    }

    /// The container's `args` (`$1` and `$2` of the script).
    pub fn args(&self) -> Vec<String> {
        vec![format!("{:.3}", self.seconds), self.checksum.clone()]
    }
}

/// POSIX `cksum`'s CRC: CRC-32 (polynomial 0x04C11DB7, MSB first) over the bytes, then over
/// the length's bytes (least significant first, no trailing zeros), inverted.
pub fn cksum(bytes: &[u8]) -> u32 {
    fn feed(crc: u32, b: u8) -> u32 {
        let mut c = crc ^ (u32::from(b) << 24);
        for _ in 0..8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04C1_1DB7
            } else {
                c << 1
            };
        }
        c
    }
    let mut crc = bytes.iter().fold(0, |c, b| feed(c, *b));
    let mut len = bytes.len();
    while len > 0 {
        crc = feed(crc, (len & 0xff) as u8);
        len >>= 8;
    }
    !crc
}

/// The line `cksum` prints for bytes on stdin: `<crc> <length>`.
pub fn cksum_line(bytes: &[u8]) -> String {
    format!("{} {}", cksum(bytes), bytes.len())
}

/// The agents' `--guest-dir` roots, where each VM's status share lives.
#[derive(Debug, Clone, Default)]
pub struct GuestDirs(pub Vec<PathBuf>);

impl GuestDirs {
    /// The exit code the guest launcher recorded for the VM `vm`, if any agent's guest
    /// directory holds one.
    pub fn exit_code(&self, vm: &str) -> Option<i32> {
        self.0.iter().find_map(|root| {
            let text = std::fs::read_to_string(root.join(vm).join("status/exit_code")).ok()?;
            text.trim().parse().ok()
        })
    }
}

/// The agents' VM name for a Pod (their default prefix; the sandbox sets no other).
pub fn vm_of(uid: &str) -> String {
    format!("tkl-{uid}")
}

/// What a finished runner's guest says about its secret check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Check {
    /// The job ran to its end and its token matched (guest exit code 0).
    Passed,
    /// The job ended non-zero: its token did not match (or the command could not run).
    Rejected(i32),
    /// The Pod failed before the job ended (no exit code): its VM was killed, as chaos's
    /// crash faults do on purpose. Not a secret failure.
    CutShort,
    /// The Pod succeeded but its guest recorded no exit code: the check cannot be trusted.
    Unverified,
    /// The sandbox first saw the Pod ended once its deletion had begun (the controller-manager's
    /// Pod garbage collector deleted it), and no exit code was left to read: the agent removes
    /// the VM's status share with the VM. The check was not made.
    NotChecked,
}

impl Check {
    /// From the Pod's end (`Succeeded` or not) and the guest's recorded exit code.
    pub fn classify(pod_succeeded: bool, guest_exit: Option<i32>) -> Check {
        match guest_exit {
            Some(0) => Check::Passed,
            Some(code) => Check::Rejected(code),
            None if pod_succeeded => Check::Unverified,
            None => Check::CutShort,
        }
    }

    /// As [`Check::classify`], for a Pod whose deletion had begun (`deleting`) when the sandbox
    /// first saw it ended: without an exit code its status share may be gone with its VM, so
    /// the check was not made, rather than failed or cut short.
    pub fn classify_seen(pod_succeeded: bool, deleting: bool, guest_exit: Option<i32>) -> Check {
        match guest_exit {
            None if deleting => Check::NotChecked,
            _ => Check::classify(pod_succeeded, guest_exit),
        }
    }

    /// How much the check rests on: a recorded exit code (2), the Pod's end with none (1),
    /// nothing (0). Of two sightings of one Pod's end, the one with more evidence stands.
    pub fn evidence(self) -> u8 {
        match self {
            Check::Passed | Check::Rejected(_) => 2,
            Check::CutShort | Check::Unverified => 1,
            Check::NotChecked => 0,
        }
    }

    /// The report's name for the outcome.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Passed => "passed",
            Check::Rejected(_) => "secret_rejected",
            Check::CutShort => "cut_short",
            Check::Unverified => "unverified",
            Check::NotChecked => "not_checked",
        }
    }
}

/// The report's `guest_checks`: finished runners by [`Check`].
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CheckCounts {
    /// Token matched.
    pub passed: u64,
    /// Job exited non-zero.
    pub secret_rejected: u64,
    /// VM ended before the job (a crash fault).
    pub cut_short: u64,
    /// Succeeded without a recorded exit code.
    pub unverified: u64,
    /// First seen ended while being deleted, with no exit code left to read.
    pub not_checked: u64,
}

impl CheckCounts {
    /// Counts `checks`.
    pub fn of<'a>(checks: impl IntoIterator<Item = &'a Check>) -> Self {
        let mut c = Self::default();
        for k in checks {
            *match k {
                Check::Passed => &mut c.passed,
                Check::Rejected(_) => &mut c.secret_rejected,
                Check::CutShort => &mut c.cut_short,
                Check::Unverified => &mut c.unverified,
                Check::NotChecked => &mut c.not_checked,
            } += 1;
        }
        c
    }
}

#[cfg(test)]
mod tests;
