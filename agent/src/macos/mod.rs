//! macOS host facts: thin shell-outs with deadlines ([`shell`]) and pure parsers of
//! the exact text formats macOS tools print ([`parse`], tested on Linux). [`MacHost`]
//! implements `crate::host::HostInfo` with them; the agent's entry code picks it on macOS.
//! `doctor` uses the same parsers for its host checks.
pub(crate) mod host;
pub(crate) mod launchctl;
pub(crate) mod parse;
pub(crate) mod shell;

pub(crate) use host::MacHost;
