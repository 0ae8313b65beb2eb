//! The parser of `launchctl print gui/<uid>`: whether the user has a live GUI session, which
//! a VM needs to start. Pure; the host checks (`hostcheck`) run the command.

/// Parses `launchctl print gui/<uid>` output for the domain's session type (`Aqua` when the
/// user has a live GUI session).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) fn parse_domain_session(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.trim().split_once(" = ")?;
        (k == "session").then(|| v.trim().to_string())
    })
}

#[cfg(test)]
mod tests;
