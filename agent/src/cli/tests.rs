use clap::CommandFactory as _;

use super::Cli;

/// `tart-kubelet X.Y.Z (COMMIT)`, COMMIT being 7 or more hex digits or `unknown`.
fn well_formed(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("tart-kubelet ") else {
        return false;
    };
    let Some((version, commit)) = rest.split_once(' ') else {
        return false;
    };
    let semver = version.split('.').count() == 3
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    let commit = commit
        .strip_prefix('(')
        .and_then(|c| c.strip_suffix(')'))
        .is_some_and(|c| {
            c == "unknown" || (c.len() >= 7 && c.chars().all(|h| h.is_ascii_hexdigit()))
        });
    semver && commit
}

#[test]
fn version_names_the_package_version_and_the_commit() {
    let text = Cli::command().render_version();
    let line = text.trim_end();
    assert!(well_formed(line), "{line:?}");
    assert!(line.contains(env!("CARGO_PKG_VERSION")), "{line:?}");
}

#[test]
fn the_version_form_is_checked() {
    for good in [
        "tart-kubelet 0.1.0 (abc1234)",
        "tart-kubelet 1.22.3 (unknown)",
    ] {
        assert!(well_formed(good), "{good}");
    }
    for bad in [
        "tart-kubelet 0.1.0",
        "tart-kubelet 0.1.0 ()",
        "tart-kubelet 0.1.0 (abc)",
        "tart-kubelet 0.1 (abc1234)",
        "kubelet 0.1.0 (abc1234)",
    ] {
        assert!(!well_formed(bad), "{bad}");
    }
}
