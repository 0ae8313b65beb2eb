//! PURE: pieces of the Prometheus text format the kubelet port's metrics paths write by hand.

use std::fmt::Write as _;

/// A Prometheus label value, escaped.
pub(crate) fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `# HELP` and `# TYPE` of a family, with kubelet's stability marker in the help.
pub(crate) fn family(out: &mut String, name: &str, ty: &str, help: &str) {
    plain_family(out, name, ty, &format!("[ALPHA] {help}"));
}

/// `# HELP` and `# TYPE` of a family whose help has no stability marker (cAdvisor's).
pub(crate) fn plain_family(out: &mut String, name: &str, ty: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {ty}");
}

/// One sample line per row: `name{labels} value[ timestamp]`; `labels` is already escaped and
/// joined, the timestamp in milliseconds.
pub(crate) fn samples<V: std::fmt::Display>(
    out: &mut String,
    name: &str,
    rows: impl IntoIterator<Item = (String, V, Option<i64>)>,
) {
    for (labels, value, ms) in rows {
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        match ms {
            Some(ms) => {
                let _ = writeln!(out, "{name}{braces} {value} {ms}");
            }
            None => {
                let _ = writeln!(out, "{name}{braces} {value}");
            }
        }
    }
}
