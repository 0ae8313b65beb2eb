//! The self-test's guest contract: the one place it writes what the guest launcher reads and
//! reads back what the launcher reports, through `crate::guest_contract` — the same layout,
//! control-share writer and status reader the Pod worker uses (docs/guest.md). A Pod's guest
//! is prepared from the Pod and the API server (`guest_contract::prepare`); the self-test has
//! neither, so it writes a fixed [`ControlSpec`] with no volumes.

use std::io;

use tart::{DirShare, VmName};

use super::steps::{COMMAND_LINE, LINE_VAR, command_argv};
use crate::guest_contract::{
    control::write_control,
    layout::GuestLayout,
    model::{ControlSpec, GuestStdin},
    status::{GuestEnd, read_end},
};
use crate::guest_file;

/// The most of the command's stdout read back: its one line, with room to spare.
const STDOUT_BYTES: u64 = 64 * 1024;
/// The most of the launcher's own log read back, for its last message.
const LAUNCHER_LOG_BYTES: u64 = 4096;

/// What the guest left in its status share.
#[derive(Debug, Default)]
pub(crate) struct GuestReport {
    /// The command's end, as the agent reads it.
    pub end: GuestEnd,
    /// The command's stdout (its tail).
    pub stdout: String,
    /// The tail of `launcher.log`: the launcher's own messages (what it waited for, what failed).
    pub launcher_log: String,
}

/// Create `vm`'s guest directory with the fixed command (which waits for `marker`) in its
/// control share and an empty status share; returns the `--dir` shares for `tart run`.
///
/// # Errors
/// I/O errors creating the directories or writing the control share.
pub(crate) fn prepare(
    layout: &GuestLayout,
    vm: &VmName,
    marker: &str,
) -> io::Result<Vec<DirShare>> {
    let control = ControlSpec {
        env: vec![(LINE_VAR.to_owned(), COMMAND_LINE.as_bytes().to_vec())],
        command: command_argv(marker),
        args: vec![],
        workdir: None,
        user: None,
        mounts: vec![],
        termination_message_path: None,
        stdin: GuestStdin::Null,
    };
    layout.create(vm, &[])?;
    write_control(&layout.control(vm), &control)?;
    Ok(layout.shares(vm, &[]))
}

/// What the launcher reported in `vm`'s status share, read as the agent reads the guest's files
/// (no link followed, regular files only, bounded).
pub(crate) fn read_report(layout: &GuestLayout, vm: &VmName) -> GuestReport {
    let status = layout.status(vm);
    let tail = |name: &str, max: u64| {
        guest_file::read_last(&status.join(name), max)
            .map(|(b, _)| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    GuestReport {
        end: read_end(&status, false),
        stdout: tail("stdout", STDOUT_BYTES),
        launcher_log: tail("launcher.log", LAUNCHER_LOG_BYTES),
    }
}

/// Remove `vm`'s guest directory; missing is fine.
///
/// # Errors
/// I/O errors other than not-found.
pub(crate) fn remove(layout: &GuestLayout, vm: &VmName) -> io::Result<()> {
    layout.remove(vm)
}
