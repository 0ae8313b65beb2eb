//! Table-driven classifier tests with the exact strings of docs/reference/tart-cli.md.

use super::*;

/// (op, exit code, stderr, expected kind)
const TABLE: &[(Op, Option<i32>, &str, ErrorKind)] = &[
    // docs/reference/tart-cli.md §1.3 E1 RuntimeErrors.
    (
        Op::Get,
        Some(2),
        "the specified VM \"vm-a\" does not exist",
        ErrorKind::NotFound,
    ),
    (
        Op::Stop,
        Some(2),
        "the specified VM \"vm-a\" does not exist",
        ErrorKind::NotFound,
    ),
    (
        Op::Delete,
        Some(2),
        "the specified VM \"vm-a\" does not exist",
        ErrorKind::NotFound,
    ),
    (
        Op::Clone,
        Some(2),
        "the specified VM \"src\" does not exist",
        ErrorKind::NotFound,
    ),
    // docs/reference/tart-cli.md §1.3: `tart run <missing>` goes through validate(): prefix and
    // exit 1.
    (
        Op::Run,
        Some(1),
        "Error: the specified VM \"vm-a\" does not exist",
        ErrorKind::NotFound,
    ),
    (
        Op::Stop,
        Some(2),
        "VM \"vm-a\" is not running",
        ErrorKind::NotRunning,
    ),
    // docs/reference/tart-cli.md §2.8 double-wrapped suspend message.
    (
        Op::Stop,
        Some(2),
        "VM \"VM \"vm-a\" is not running\" is not running",
        ErrorKind::NotRunning,
    ),
    (
        Op::Run,
        Some(2),
        "VM \"vm-a\" is already running!",
        ErrorKind::AlreadyRunning,
    ),
    (
        Op::Delete,
        Some(1),
        "VM \"vm-a\" is running",
        ErrorKind::LockBusy,
    ),
    (
        Op::Run,
        Some(1),
        "failed to lock file:///Users/u/.tart/vms/a/config.json: 35",
        ErrorKind::LockBusy,
    ),
    // docs/reference/tart-cli.md §3.4.
    (
        Op::Run,
        Some(1),
        "The number of VMs exceeds the system limit (other running VMs: vm-a, vm-b)",
        ErrorKind::VmLimit,
    ),
    (
        Op::Run,
        Some(1),
        "The number of VMs exceeds the system limit",
        ErrorKind::VmLimit,
    ),
    (
        Op::Run,
        Some(1),
        "The maximum supported number of active virtual machines has been reached.",
        ErrorKind::VmLimit,
    ),
    // docs/reference/tart-cli.md §2.6.
    (
        Op::Run,
        Some(1),
        "Error: Error Domain=VZErrorDomain Code=2 \"Failed to lock auxiliary storage.\" UserInfo={NSLocalizedFailure=Failed to lock auxiliary storage.}",
        ErrorKind::AuxStorageLocked,
    ),
    (
        Op::Run,
        Some(1),
        "Error Domain=VZErrorDomain Code=2 \"Failed to lock auxiliary storage.\"",
        ErrorKind::AuxStorageLocked,
    ),
    // docs/reference/tart-cli.md §2.1 network.
    (
        Op::Pull,
        Some(1),
        "Error: The request timed out.",
        ErrorKind::Network,
    ),
    (
        Op::Clone,
        Some(1),
        "Error: The request timed out.",
        ErrorKind::Network,
    ),
    (
        Op::Pull,
        Some(1),
        "Error: The network connection was lost.",
        ErrorKind::Network,
    ),
    (
        Op::Pull,
        Some(1),
        "Error: Could not connect to the server.",
        ErrorKind::Network,
    ),
    (
        Op::Pull,
        Some(1),
        "Error: The Internet connection appears to be offline.",
        ErrorKind::Network,
    ),
    // docs/reference/tart-cli.md §2.1 disk full (fake-tart's text).
    (
        Op::Pull,
        Some(1),
        "Error: The operation couldn’t be completed. No space left on device",
        ErrorKind::NoSpace,
    ),
    (
        Op::Clone,
        Some(1),
        "Error: write failed: ENOSPC",
        ErrorKind::NoSpace,
    ),
    // docs/reference/tart-cli.md §2.1 auth.
    (
        Op::Pull,
        Some(1),
        "Error: AuthFailed(why: \"received unexpected HTTP status code 401 while retrieving an authentication token\", details: \"\")",
        ErrorKind::Auth,
    ),
    (
        Op::Pull,
        Some(1),
        "Error: AuthFailed(why: \"got HTTP 401, but WWW-Authenticate header is missing\")",
        ErrorKind::Auth,
    ),
    (
        Op::Pull,
        Some(1),
        "Error: UnexpectedHTTPStatusCode(when: \"pulling manifest\", code: 401, details: \"\")",
        ErrorKind::Auth,
    ),
    (
        Op::Pull,
        Some(1),
        "Error: UnexpectedHTTPStatusCode(when: \"pulling manifest\", code: 403, details: \"denied\")",
        ErrorKind::Auth,
    ),
    (
        Op::Pull,
        Some(1),
        "invalid credentials: bad password",
        ErrorKind::Auth,
    ),
    // docs/reference/tart-cli.md §2.1 image not found.
    (
        Op::Pull,
        Some(1),
        "Error: UnexpectedHTTPStatusCode(when: \"pulling manifest\", code: 404, details: \"{\\\"errors\\\":[]}\")",
        ErrorKind::NotFound,
    ),
    (
        Op::Clone,
        Some(1),
        "Error: UnexpectedHTTPStatusCode(when: \"pulling manifest\", code: 404, details: \"\")",
        ErrorKind::NotFound,
    ),
    // docs/reference/tart-cli.md §1.3 E3/E4 usage.
    (
        Op::List,
        Some(64),
        "Error: 'x' is not a valid <source>\nUsage: tart list [--source <source>]",
        ErrorKind::Usage,
    ),
    (
        Op::Prune,
        Some(64),
        "Error: at least one pruning criteria must be specified",
        ErrorKind::Usage,
    ),
    // Anything else.
    (
        Op::Run,
        Some(1),
        "Error Domain=VZErrorDomain Code=1 \"The virtual machine failed to start.\"",
        ErrorKind::Other,
    ),
    (
        Op::Run,
        Some(1),
        "Error: InitializationFailed(why: \"softnet not found in PATH\")",
        ErrorKind::Other,
    ),
    (
        Op::Set,
        Some(1),
        "new disk size of 50 should be larger than the current disk size of 80",
        ErrorKind::Other,
    ),
    (
        Op::Stop,
        Some(1),
        "failed to forcefully terminate the VM \"a\": 1",
        ErrorKind::Other,
    ),
    (Op::Get, Some(1), "", ErrorKind::Other),
    (Op::Get, None, "", ErrorKind::Other),
    // docs/reference/tart-cli.md §2.10: exec exit codes are the guest's.
    (Op::Exec, Some(64), "usage: mytool", ErrorKind::Other),
    (
        Op::Exec,
        Some(2),
        "ls: x: No such file or directory",
        ErrorKind::Other,
    ),
    (
        Op::Exec,
        Some(2),
        "the specified VM \"a\" does not exist",
        ErrorKind::NotFound,
    ),
    (
        Op::Exec,
        Some(2),
        "VM \"a\" is not running",
        ErrorKind::NotRunning,
    ),
];

#[test]
fn every_spec_string_is_classified() {
    for (op, code, text, want) in TABLE {
        assert_eq!(classify(*op, *code, text), *want, "{op} {code:?} {text:?}");
    }
}

#[test]
fn every_error_kind_except_process_ones_is_reachable_from_text() {
    for kind in ErrorKind::ALL {
        if matches!(
            kind,
            ErrorKind::Timeout | ErrorKind::Stalled | ErrorKind::Spawn
        ) {
            continue; // assigned by the process layer, not by output
        }
        assert!(
            TABLE.iter().any(|(_, _, _, k)| *k == kind),
            "no table row for {kind:?}"
        );
    }
}

#[test]
fn exec_guest_failures_are_not_tart_failures() {
    assert_eq!(classify_exec("grep: nothing matched"), None);
    assert_eq!(classify_exec("something does not exist"), None);
    assert_eq!(
        classify_exec(
            "Failed to connect to the VM using its control socket: x, is the Tart Guest Agent running?"
        ),
        Some(ErrorKind::Other)
    );
}

#[test]
fn message_is_the_deciding_line() {
    let e = Error::from_exit(
        Op::Run,
        Some(1),
        "noise\nThe number of VMs exceeds the system limit (other running VMs: a, b)\n",
    );
    assert_eq!(e.kind(), ErrorKind::VmLimit);
    assert_eq!(
        e.message,
        "The number of VMs exceeds the system limit (other running VMs: a, b)"
    );
    let e = Error::from_exit(Op::Get, Some(1), "\n  first \nsecond");
    assert_eq!(e.message, "first");
    let e = Error::from_exit(Op::Get, Some(3), "");
    assert_eq!(e.message, "exit code 3, no stderr");
}

#[test]
fn huge_message_is_truncated_on_a_char_boundary() {
    let text = "é".repeat(5000);
    let e = Error::from_exit(Op::Get, Some(1), &text);
    assert!(e.message.len() <= MAX_MESSAGE + '…'.len_utf8());
    assert!(e.message.ends_with('…'));
}

#[test]
fn retryable_and_host_fault_sets_are_as_documented() {
    let retry: Vec<_> = ErrorKind::ALL
        .into_iter()
        .filter(|k| k.is_retryable())
        .collect();
    assert_eq!(
        retry,
        [
            ErrorKind::LockBusy,
            ErrorKind::Timeout,
            ErrorKind::Stalled,
            ErrorKind::Network
        ]
    );
    assert!(ErrorKind::VmLimit.is_host_fault());
    assert!(!ErrorKind::NotFound.is_host_fault());
}

#[test]
fn an_invalid_tart_home_is_not_a_missing_vm() {
    // docs/reference/tart-cli.md §1.1: this message contains "does not exist" but says nothing
    // about the VM; a delete that treated it as NotFound would report success on a broken host.
    let stderr = "Error: TART_HOME is invalid: /Volumes/x/.tart does not exist, yet we can't \
                  create it: Permission denied";
    for op in [Op::Delete, Op::Get, Op::Clone, Op::Pull] {
        assert_eq!(classify(op, Some(1), stderr), ErrorKind::Other, "{op:?}");
    }
}
