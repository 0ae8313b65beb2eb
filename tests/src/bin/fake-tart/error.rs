//! How fake-tart fails: the four error paths of docs/reference/tart-cli.md §1.3 (E1 unprefixed
//! RuntimeError with exit 1/2, E2 `Error: …` exit 1, E3/E4 `Error: …` plus a usage block exit 64)
//! and plain exit codes.

use std::fmt;
use std::io;

/// A way for a command to end other than success. `Display` is exactly what goes to stderr.
/// (Hand-written `Display` rather than `thiserror`: the tests package does not depend on it.)
#[derive(Debug)]
pub enum Failure {
    /// E1: a `RuntimeError`, printed without prefix; exit 2 for the "VM state" cases, else 1.
    Runtime { msg: String, code: i32 },
    /// E2: any other error, `Error: <message>`, exit 1.
    Other(String),
    /// E3/E4: validation or parse error, `Error: <message>` and a usage block, exit 64.
    Usage { msg: String, usage: String },
    /// An I/O error surfaces the E2 way.
    Io(io::Error),
    /// Exit with this code; any output was already written (e.g. `exec`'s guest exit code).
    Exit(i32),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Runtime { msg, .. } => write!(f, "{msg}"),
            Failure::Other(msg) => write!(f, "Error: {msg}"),
            Failure::Usage { msg, usage } => write!(f, "Error: {msg}\n{usage}"),
            Failure::Io(e) => write!(f, "Error: {e}"),
            Failure::Exit(_) => Ok(()),
        }
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Failure::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::Io(e)
    }
}

impl Failure {
    pub fn runtime(msg: impl Into<String>, code: i32) -> Failure {
        Failure::Runtime {
            msg: msg.into(),
            code,
        }
    }
    pub fn other(msg: impl Into<String>) -> Failure {
        Failure::Other(msg.into())
    }
    /// `the specified VM "<name>" does not exist` (E1, exit 2).
    pub fn not_found(name: &str) -> Failure {
        Failure::runtime(format!("the specified VM \"{name}\" does not exist"), 2)
    }
    /// `VM "<name>" is not running` (E1, exit 2).
    pub fn not_running(name: &str) -> Failure {
        Failure::runtime(format!("VM \"{name}\" is not running"), 2)
    }
    /// E4 for subcommand `sub`: `Error: <msg>` plus the subcommand usage, exit 64.
    pub fn usage(sub: &str, msg: impl Into<String>) -> Failure {
        Failure::Usage {
            msg: msg.into(),
            usage: crate::cli::usage_block(sub),
        }
    }
    /// E3: `Error: <msg>` plus the root usage, exit 64.
    pub fn validation(msg: impl Into<String>) -> Failure {
        Failure::Usage {
            msg: msg.into(),
            usage: "Usage: tart <subcommand>\n  See 'tart --help' for more information.".into(),
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Runtime { code, .. } => *code,
            Failure::Other(_) | Failure::Io(_) => 1,
            Failure::Usage { .. } => 64,
            Failure::Exit(code) => *code,
        }
    }
}

impl From<nix::errno::Errno> for Failure {
    fn from(e: nix::errno::Errno) -> Failure {
        Failure::Io(e.into())
    }
}
