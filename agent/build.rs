//! Records the commit the agent is built from, for `tart-kubelet --version`.
//!
//! `TART_KUBELET_COMMIT` set in the build's environment wins (a build from a tarball, where
//! there is no git checkout, can name its commit this way); otherwise `git rev-parse` in the
//! source tree; otherwise `unknown`. A missing `git` or checkout never fails the build.

use std::{path::Path, process::Command};

fn main() {
    println!("cargo:rerun-if-env-changed=TART_KUBELET_COMMIT");
    let commit = std::env::var("TART_KUBELET_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=TART_KUBELET_COMMIT={}", commit.trim());
}

/// The short hash of `HEAD`, and a rerun whenever `HEAD` or the branch it names moves.
fn git_commit() -> Option<String> {
    let hash = git(&["rev-parse", "--short=7", "HEAD"])?;
    for file in ["HEAD", "packed-refs"] {
        rerun_if_changed(git(&["rev-parse", "--git-path", file]));
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        rerun_if_changed(git(&["rev-parse", "--git-path", &branch]));
    }
    hash.chars().all(|c| c.is_ascii_hexdigit()).then_some(hash)
}

fn rerun_if_changed(path: Option<String>) {
    if let Some(path) = path.filter(|p| Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
}

/// `git ARGS` in the package's directory: its trimmed output, or `None` on any failure.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!text.is_empty()).then_some(text)
}
