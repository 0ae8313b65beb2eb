//! Pure parsers of the exact text macOS tools print
//! (docs/reference/host-and-conventions.md §3, §1.2). Tested on Linux against those formats; no I/O
//! here.
use std::collections::BTreeMap;

pub(crate) mod vitals;

/// `sysctl a.b c.d` output: one `name: value` per line (SYSCMDS `show_var`).
pub(crate) fn sysctl_lines(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(": ")?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// `ioreg -rd1 -c IOPlatformExpertDevice` -> the value of `"IOPlatformUUID" = "..."`.
pub(crate) fn ioreg_platform_uuid(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "\"IOPlatformUUID\"").then(|| v.trim().trim_matches('"').to_string())
    })
}

/// `defaults read <domain> <key>` of an old-style (NeXTSTEP) dictionary: the value of `key`
/// inside `{ key = value; ... }`, unquoted. Used for `bootpd` -> `DHCPLeaseTimeSecs`.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) fn defaults_dict_value(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.trim().split_once(" = ")?;
        (k.trim().trim_matches('"') == key).then(|| {
            v.trim()
                .trim_end_matches(';')
                .trim()
                .trim_matches('"')
                .to_string()
        })
    })
}

#[cfg(test)]
mod tests;
