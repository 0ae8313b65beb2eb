//! PURE: remotecommand over SPDY (docs/reference/kubelet-api.md §3.2, §5.1, §5.3) — the protocol
//! versions served, the exec query, the stream roles a session waits for, the status written on the
//! error stream, and the resize stream's JSON.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause;
use serde::Deserialize;

use crate::kubelet_api::stream::status;

/// A remotecommand version, as `X-Stream-Protocol-Version` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// `v4.channel.k8s.io`: status JSON with the exit code, resize.
    V4,
    /// `v3.channel.k8s.io`: resize, error text.
    V3,
    /// `v2.channel.k8s.io`: error text.
    V2,
    /// `channel.k8s.io`: error text.
    V1,
}

/// Served versions, preferred first. `v5.channel.k8s.io` is left out as kubelet leaves it out
/// over SPDY, so kubectl's first offer falls through to v4.
pub(crate) const PROTOCOLS: [Protocol; 4] =
    [Protocol::V4, Protocol::V3, Protocol::V2, Protocol::V1];

impl Protocol {
    /// The header value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::V4 => "v4.channel.k8s.io",
            Self::V3 => "v3.channel.k8s.io",
            Self::V2 => "v2.channel.k8s.io",
            Self::V1 => "channel.k8s.io",
        }
    }

    fn has_resize(self) -> bool {
        matches!(self, Self::V4 | Self::V3)
    }
}

/// Why no version was agreed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NegotiationError {
    /// No `X-Stream-Protocol-Version` at all (400).
    Missing,
    /// None offered is served (403, with the served list).
    Unsupported(Vec<String>),
}

/// The first of `offers` (the client's, in its order of preference) that is in `served`.
///
/// # Errors
/// [`NegotiationError`] when `offers` is empty or shares nothing with `served`.
pub(crate) fn first_served(
    offers: &[String],
    served: &[&'static str],
) -> Result<&'static str, NegotiationError> {
    if offers.is_empty() {
        return Err(NegotiationError::Missing);
    }
    offers
        .iter()
        .find_map(|o| served.iter().copied().find(|s| s == o))
        .ok_or_else(|| NegotiationError::Unsupported(offers.to_vec()))
}

/// What the exec query asks for (`command` repeated, `input`/`output`/`error`/`tty` = `1`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ExecOptions {
    /// The argv, verbatim.
    pub command: Vec<String>,
    /// `input=1`.
    pub stdin: bool,
    /// `output=1`.
    pub stdout: bool,
    /// `error=1` (always false with a TTY, as kubelet drops it).
    pub stderr: bool,
    /// `tty=1`.
    pub tty: bool,
}

/// kubelet's answer to a query that asks for no stream.
pub(crate) const NO_STREAMS: &str = "you must specify at least 1 of stdin, stdout, stderr";
/// The answer to a query with no command.
pub(crate) const NO_COMMAND: &str = "you must specify a command";

/// The exec options of a query string.
///
/// # Errors
/// The 400 text when no stream or no command is asked for.
pub(crate) fn exec_options(query: &str) -> Result<ExecOptions, &'static str> {
    let o = attach_options(query)?;
    if o.command.is_empty() {
        return Err(NO_COMMAND);
    }
    Ok(o)
}

/// PURE: the options of an `/attach` query: those of `/exec` without a command.
///
/// # Errors
/// The 400 message when no stream is asked for.
pub(crate) fn attach_options(query: &str) -> Result<ExecOptions, &'static str> {
    let mut o = ExecOptions::default();
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        let on = v == "1";
        match k.as_ref() {
            "command" => o.command.push(v.into_owned()),
            "input" => o.stdin = on,
            "output" => o.stdout = on,
            "error" => o.stderr = on,
            "tty" => o.tty = on,
            _ => {}
        }
    }
    if o.tty {
        o.stderr = false;
    }
    if !(o.stdin || o.stdout || o.stderr) {
        return Err(NO_STREAMS);
    }
    Ok(o)
}

/// A stream's role, from its `streamtype` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    /// Server → client: the status.
    Error,
    /// Client → server.
    Stdin,
    /// Server → client.
    Stdout,
    /// Server → client.
    Stderr,
    /// Client → server: terminal sizes.
    Resize,
}

impl Role {
    /// The `streamtype` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Stdin => "stdin",
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
            Self::Resize => "resize",
        }
    }

    /// The role of a `streamtype` value; `None` for values kubelet ignores.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        [
            Self::Error,
            Self::Stdin,
            Self::Stdout,
            Self::Stderr,
            Self::Resize,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

/// The streams a session waits for before it starts the command.
pub(crate) fn expected(o: &ExecOptions, p: Protocol) -> Vec<Role> {
    let mut v = vec![Role::Error];
    let want = [
        (o.stdin, Role::Stdin),
        (o.stdout, Role::Stdout),
        (o.stderr, Role::Stderr),
        (o.tty && p.has_resize(), Role::Resize),
    ];
    v.extend(want.into_iter().filter(|(on, _)| *on).map(|(_, r)| r));
    v
}

/// How the command ended, as the error stream reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It exited with this code.
    Exited {
        /// The exit code (0–255).
        code: i32,
        /// The argv, for the message.
        command: Vec<String>,
    },
    /// It could not be run.
    Failed(String),
}

/// What to write on the error stream; empty means success for every version.
pub(crate) fn status(o: &Outcome, p: Protocol) -> String {
    let (message, typed) = match o {
        Outcome::Exited { code: 0, .. } => (None, status::success()),
        Outcome::Exited { code, command } => {
            let code = (*code).clamp(0, 255);
            let message = format!(
                "command terminated with non-zero exit code: error executing command [{}], exit code {code}",
                command.join(" ")
            );
            let cause = StatusCause {
                reason: Some("ExitCode".to_owned()),
                message: Some(code.to_string()),
                ..StatusCause::default()
            };
            let typed = status::failure(message.clone(), "NonZeroExitCode", None, cause);
            (Some(message), typed)
        }
        Outcome::Failed(e) => {
            let message = format!("Internal error occurred: {e}");
            let cause = StatusCause {
                message: Some(e.clone()),
                ..StatusCause::default()
            };
            let typed = status::failure(message.clone(), "InternalError", Some(500), cause);
            (Some(message), typed)
        }
    };
    match p {
        Protocol::V4 => status::stream_body(&typed),
        _ => message.unwrap_or_default(),
    }
}

/// One terminal size on the resize stream (client-go's `TerminalSize` has no JSON tags, so the
/// keys are capitalised; Go's decoder also takes other cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct TermSize {
    /// Columns.
    #[serde(alias = "width", alias = "WIDTH")]
    #[serde(rename = "Width")]
    pub width: u16,
    /// Rows.
    #[serde(alias = "height", alias = "HEIGHT")]
    #[serde(rename = "Height")]
    pub height: u16,
}

/// Splits the resize stream into sizes, whatever the DATA frame boundaries.
#[derive(Debug, Default)]
pub(crate) struct ResizeDecoder {
    pending: Vec<u8>,
}

/// The resize stream is not JSON sizes: kubelet stops reading it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("resize stream is not a sequence of terminal sizes: {0}")]
pub(crate) struct ResizeError(String);

/// Longest partial object kept (a size is ~30 bytes).
const MAX_PENDING: usize = 4096;

impl ResizeDecoder {
    /// The sizes completed by `bytes`.
    ///
    /// # Errors
    /// [`ResizeError`] for bytes that are not a size.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<Vec<TermSize>, ResizeError> {
        self.pending.extend_from_slice(bytes);
        let mut sizes = Vec::new();
        let mut it = serde_json::Deserializer::from_slice(&self.pending).into_iter::<TermSize>();
        let mut used = 0;
        loop {
            match it.next() {
                Some(Ok(s)) => {
                    sizes.push(s);
                    used = it.byte_offset();
                }
                Some(Err(e)) if e.is_eof() => break,
                Some(Err(e)) => return Err(ResizeError(e.to_string())),
                None => {
                    used = self.pending.len();
                    break;
                }
            }
        }
        self.pending.drain(..used);
        if self.pending.len() > MAX_PENDING {
            return Err(ResizeError("object too long".into()));
        }
        Ok(sizes)
    }
}

#[cfg(test)]
mod tests;
