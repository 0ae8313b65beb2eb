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
    let _ = writeln!(out, "# HELP {name} [ALPHA] {help}");
    let _ = writeln!(out, "# TYPE {name} {ty}");
}
