//! The self-test's steps and its decisions, pure: the fixed guest command and `exec` and what
//! their results must be, which step comes next after a failure, the verdict and the exit
//! code.

use std::time::Duration;

use tart::{ExecOutput, VmName};

use crate::guest_contract::status::GuestEnd;

/// The line the guest's command prints, taken from its environment (so the output also proves
/// the environment reached it).
pub(crate) const COMMAND_LINE: &str = "tart-kubelet smoke: the command ran";
/// The variable that carries [`COMMAND_LINE`] into the guest.
pub(crate) const LINE_VAR: &str = "TART_KUBELET_SMOKE_LINE";
/// The command's exit code once it has seen the `exec`'s marker: non-zero, so a guest that
/// reports every end as 0 (or 1) fails the check.
pub(crate) const EXPECTED_EXIT: i32 = 42;
/// The command's exit code when the marker never came (it stops waiting after
/// [`MARKER_POLLS`] polls of half a second).
pub(crate) const NO_MARKER_EXIT: i32 = 3;
/// Half-second polls of the marker: five minutes.
const MARKER_POLLS: u32 = 600;
/// The line the `exec` prints.
pub(crate) const EXEC_LINE: &str = "tart-kubelet smoke: exec ran";

/// One step, in the order they run. `Stop` and `Delete` are the clean-up: they run whatever
/// happened before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The image is in Tart's cache (or a local VM), else pulled.
    Image,
    /// `tart clone` into the self-test's VM.
    Clone,
    /// `tart set`, as the Pod worker sets a clone.
    Set,
    /// The guest's shares written (control: the command; status: empty).
    Guest,
    /// `tart run` with the shares, then `tart ip`.
    Boot,
    /// A guest launcher reports, delivered through the Tart Guest Agent as the launcher mode
    /// says, as the Pod worker waits for one before a container runs.
    Launcher,
    /// `tart exec` of a fixed command in the running guest.
    Exec,
    /// The command's end read from the status share: exit code and output.
    Command,
    /// `tart stop`, when the VM still runs.
    Stop,
    /// `tart delete` and the guest directory removed.
    Delete,
}

impl Step {
    /// Every step, in order.
    pub(crate) const ALL: [Step; 10] = [
        Step::Image,
        Step::Clone,
        Step::Set,
        Step::Guest,
        Step::Boot,
        Step::Launcher,
        Step::Exec,
        Step::Command,
        Step::Stop,
        Step::Delete,
    ];

    /// The step's name in the table and in the failure line.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Step::Image => "image",
            Step::Clone => "clone",
            Step::Set => "set",
            Step::Guest => "guest",
            Step::Boot => "boot",
            Step::Launcher => "launcher",
            Step::Exec => "exec",
            Step::Command => "command",
            Step::Stop => "stop",
            Step::Delete => "delete",
        }
    }

    /// The clean-up runs after any failure or interruption.
    pub(crate) fn is_cleanup(self) -> bool {
        matches!(self, Step::Stop | Step::Delete)
    }
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It did what it should.
    Ok,
    /// It failed; the detail says how.
    Failed,
    /// Not run: an earlier step failed or the run was interrupted.
    Skipped,
    /// Cut short by Ctrl-C (SIGINT) or SIGTERM.
    Interrupted,
}

impl Outcome {
    /// The RESULT column.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
            Outcome::Interrupted => "interrupted",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Report {
    pub step: Step,
    pub outcome: Outcome,
    pub took: Duration,
    pub detail: String,
}

impl Report {
    /// A step that was not run because of `why` (the step that failed, or the interruption).
    pub(crate) fn skipped(step: Step, why: &str) -> Self {
        Self {
            step,
            outcome: Outcome::Skipped,
            took: Duration::ZERO,
            detail: why.to_owned(),
        }
    }
}

/// What the self-test concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every step passed.
    Passed,
    /// The first step that failed.
    Failed(Step),
    /// Interrupted during this step (and nothing failed before it).
    Interrupted(Step),
}

impl Verdict {
    /// The first step that did not pass, in the order the steps ran (the clean-up included:
    /// a VM left behind is a failure).
    pub(crate) fn of(reports: &[Report]) -> Self {
        for r in reports {
            match r.outcome {
                Outcome::Ok | Outcome::Skipped => {}
                Outcome::Failed => return Verdict::Failed(r.step),
                Outcome::Interrupted => return Verdict::Interrupted(r.step),
            }
        }
        Verdict::Passed
    }

    /// The process exit code: 0 passed, 1 a step failed, 130 interrupted (the shell's code
    /// for SIGINT).
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Verdict::Passed => 0,
            Verdict::Failed(_) => 1,
            Verdict::Interrupted(_) => 130,
        }
    }

    /// The last line printed.
    pub(crate) fn summary(self) -> String {
        match self {
            Verdict::Passed => "smoke test passed".to_owned(),
            Verdict::Failed(s) => format!("smoke test failed at step {}", s.as_str()),
            Verdict::Interrupted(s) => format!("smoke test interrupted at step {}", s.as_str()),
        }
    }
}

/// Which steps run: all of them in order until one does not pass; after that the others are
/// skipped, naming why, and the clean-up still runs.
#[derive(Debug, Default)]
pub(crate) struct Sequence {
    /// Why the run halted: the first step that did not pass, or the interruption.
    halted: Option<String>,
}

impl Sequence {
    /// `None`: run `step`; else its skipped row.
    pub(crate) fn skip(&self, step: Step) -> Option<Report> {
        match &self.halted {
            Some(why) if !step.is_cleanup() => Some(Report::skipped(step, why)),
            _ => None,
        }
    }

    /// Record how a step that ran ended.
    pub(crate) fn ended(&mut self, step: Step, outcome: Outcome) {
        if self.halted.is_some() {
            return;
        }
        self.halted = match outcome {
            Outcome::Ok | Outcome::Skipped => None,
            Outcome::Failed => Some(format!("{} failed", step.as_str())),
            Outcome::Interrupted => Some("interrupted".to_owned()),
        };
    }

    /// Some step did not pass.
    pub(crate) fn halted(&self) -> bool {
        self.halted.is_some()
    }
}

/// The self-test VM's name: the agent's prefix, `smoke-` and `suffix`. It is never one of the
/// agent's Pod VMs (those are the prefix and a UUID), so a running agent neither adopts nor
/// collects it.
///
/// # Errors
/// The name Tart would refuse, with its reason.
pub(crate) fn vm_name(prefix: &str, suffix: &str) -> Result<VmName, String> {
    VmName::new(format!("{prefix}smoke-{suffix}"))
}

/// The guest's command: print [`COMMAND_LINE`] from the environment, wait for `marker` (which
/// the `exec` creates), then exit [`EXPECTED_EXIT`]; [`NO_MARKER_EXIT`] when the marker never
/// comes. The marker's path is an argument, never part of the script.
pub(crate) fn command_argv(marker: &str) -> Vec<String> {
    let script = format!(
        "printf '%s\\n' \"${LINE_VAR}\"\n\
         i=0\n\
         while [ ! -e \"$1\" ]; do\n\
         \x20 i=$((i + 1)); [ \"$i\" -gt {MARKER_POLLS} ] && exit {NO_MARKER_EXIT}\n\
         \x20 sleep 0.5\n\
         done\n\
         rm -f \"$1\"\n\
         exit {EXPECTED_EXIT}\n"
    );
    vec![
        "/bin/sh".into(),
        "-c".into(),
        script,
        "sh".into(),
        marker.into(),
    ]
}

/// The `exec`'s argv: print [`EXEC_LINE`] and create `marker`.
pub(crate) fn exec_argv(marker: &str) -> Vec<String> {
    vec![
        "/bin/sh".into(),
        "-c".into(),
        format!("echo '{EXEC_LINE}' && : > \"$1\""),
        "sh".into(),
        marker.into(),
    ]
}

/// Whether the `exec` did what it should: exit 0 and [`EXEC_LINE`] on its stdout.
///
/// # Errors
/// What differs, with the first line of its stderr.
pub(crate) fn check_exec(out: &ExecOutput) -> Result<String, String> {
    let first_err = out.stderr.lines().next().unwrap_or("").trim();
    if out.exit_code != 0 {
        return Err(format!(
            "exit code {} (expected 0): {first_err}",
            out.exit_code
        ));
    }
    if !out.stdout.lines().any(|l| l == EXEC_LINE) {
        return Err(format!("its output lacks {EXEC_LINE:?}"));
    }
    Ok("exit code 0 and the expected line".to_owned())
}

/// Whether the guest's command ended as it should, as the agent reads the status share:
/// exit code [`EXPECTED_EXIT`] and [`COMMAND_LINE`] in its stdout.
///
/// # Errors
/// What differs: no exit code (with the launcher's `state`, which says how far it got), another
/// code, or the line missing.
pub(crate) fn check_command(end: &GuestEnd, stdout: &str) -> Result<String, String> {
    let state = end.state.as_deref().unwrap_or("none");
    let Some(code) = end.exit_code else {
        return Err(format!(
            "the guest reported no exit code (status share state: {state})"
        ));
    };
    if code == NO_MARKER_EXIT {
        return Err(format!(
            "exit code {code}: the command never saw the exec's marker"
        ));
    }
    if code != EXPECTED_EXIT {
        return Err(format!("exit code {code} (expected {EXPECTED_EXIT})"));
    }
    if !stdout.lines().any(|l| l == COMMAND_LINE) {
        return Err(format!(
            "exit code {code}, but its output lacks {COMMAND_LINE:?}"
        ));
    }
    Ok(format!("exit code {code} and the expected line"))
}

/// Longest launcher message quoted in a detail.
const MAX_QUOTED: usize = 200;

/// `detail`, followed by the last line of the launcher's log when it has one: the launcher's
/// own word on what it waited for or what failed. The guest wrote it, so only printable
/// characters are kept, at most [`MAX_QUOTED`] of them.
pub(crate) fn with_launcher_log(detail: String, log: &str) -> String {
    let last = log.lines().rev().map(str::trim).find(|l| !l.is_empty());
    let Some(last) = last else {
        return detail;
    };
    let quoted: String = last
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_QUOTED)
        .collect();
    format!("{detail}; launcher.log: {quoted}")
}
