//! macOS host facts: thin shell-outs with deadlines ([`shell`]) and pure parsers of
//! the exact text formats macOS tools print ([`parse`], tested on Linux). [`MacHost`]
//! implements `crate::host::HostInfo` with them; the agent's entry code picks it on macOS.
//! `doctor` uses the same parsers for its host checks.
pub mod host;
pub mod launchctl;
pub mod parse;
pub mod shell;

pub use host::MacHost;
