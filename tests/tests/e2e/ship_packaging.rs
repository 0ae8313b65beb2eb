//! packaging/: the pkg build script refuses to run off macOS (pkgbuild is macOS-only); every
//! shell script of the project is shellcheck-clean; the Homebrew formula's service block and
//! test use what the agent has.
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn pkg_build_script_refuses_to_run_off_macos() {
    if cfg!(target_os = "macos") {
        return;
    }
    let out = Command::new("bash")
        .arg(repo().join("packaging/pkg/build.sh"))
        .arg("/nonexistent/tart-kubelet-0.1.0-darwin-arm64.tar.gz")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("macOS-only"));
}

/// Every shell script the project ships or runs: packaging (the guest launcher included), the
/// cluster scripts, the sandbox launcher and CI's entry point. shellcheck comes from Debian
/// (`tests/cluster/build.sh` installs it); without it this test fails rather than pass having
/// checked nothing.
#[test]
fn every_shell_script_passes_shellcheck() {
    let mut scripts = vec![
        repo().join(".ci/run"),
        repo().join("scripts/sandbox"),
        repo().join("scripts/release"),
        repo().join("scripts/build-darwin"),
        repo().join("packaging/pkg/build.sh"),
        repo().join("packaging/pkg/scripts/postinstall"),
        repo().join("packaging/pkg/uninstall"),
        repo().join("packaging/guest/tart-guest-launcher"),
        repo().join("monitoring/runbook-base"),
        repo().join("packaging/arc/tart-runner-entry"),
    ];
    for e in std::fs::read_dir(repo().join("tests/cluster")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sh") {
            scripts.push(p);
        }
    }
    assert!(scripts.len() >= 10, "{scripts:?}");
    let out = Command::new("shellcheck")
        .arg("-x")
        .args(&scripts)
        .output()
        .expect("shellcheck not installed: run tests/cluster/build.sh (Debian package shellcheck)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn homebrew_formula_service_runs_the_agent_with_its_config_file() {
    let f = std::fs::read_to_string(repo().join("packaging/homebrew/tart-kubelet.rb")).unwrap();
    for needle in [
        "service do",
        r#"run [opt_bin/"tart-kubelet", "--config", etc/"tart-kubelet/config.toml"]"#,
        "keep_alive true",
        "throttle_interval 10",
        "process_type :interactive",
        "depends_on arch: :arm64",
        r#"pkgshare.install "guest", "kubernetes", "launchd", "monitoring""#,
    ] {
        assert!(f.contains(needle), "formula lacks {needle}");
    }
    // The caveats and the formula test call install with flags the agent really has.
    let help = Command::new(env!("CARGO_BIN_EXE_agent-under-test"))
        .args(["install", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["--user", "--binary", "--config", "--dry-run", "--home"] {
        assert!(f.contains(flag), "formula does not use {flag}");
        assert!(help.contains(flag), "install has no {flag}");
    }
}
