//! packaging/: the pkg build script refuses to run off macOS (pkgbuild is macOS-only) and is
//! shellcheck-clean; the Homebrew formula's service block and test use what the agent has.
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
        .args(["/nonexistent/tart-kubelet", "0.1.0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("macOS-only"));
}

#[test]
fn packaging_shell_scripts_pass_shellcheck() {
    let Ok(out) = Command::new("shellcheck")
        .arg(repo().join("packaging/pkg/build.sh"))
        .arg(repo().join("packaging/pkg/scripts/postinstall"))
        .output()
    else {
        eprintln!("shellcheck not installed; checked bash syntax only");
        for f in [
            "packaging/pkg/build.sh",
            "packaging/pkg/scripts/postinstall",
        ] {
            let st = Command::new("bash")
                .arg("-n")
                .arg(repo().join(f))
                .status()
                .unwrap();
            assert!(st.success(), "{f} has a syntax error");
        }
        return;
    };
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
        r#"pkgshare.install "config.example.toml", "rbac.yaml", "launchd""#,
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
