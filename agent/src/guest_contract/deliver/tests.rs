use std::{os::unix::fs::PermissionsExt, path::Path, time::Duration};

use tart::{ErrorKind, ExecOutput, Op};

use super::*;

fn out(code: i32, stdout: &str, stderr: &str) -> ExecOutput {
    ExecOutput {
        exit_code: code,
        stdout: stdout.into(),
        stderr: stderr.into(),
    }
}

#[test]
fn the_embedded_files_are_the_packaged_ones() {
    let pkg = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/guest");
    let launcher = std::fs::read_to_string(pkg.join("tart-guest-launcher")).unwrap();
    let plist = std::fs::read_to_string(pkg.join("dev.tart-kubelet.guest-launcher.plist")).unwrap();
    assert_eq!(LAUNCHER, launcher);
    assert_eq!(PLIST, plist);
}

#[test]
fn the_installer_runs_as_root_without_a_password_and_gets_the_files_as_arguments() {
    let a = argv(Install::IfMissing);
    assert_eq!(&a[..4], ["sudo", "-n", "/bin/sh", "-c"]);
    assert_eq!(a[4], SCRIPT);
    assert_eq!(&a[5..7], [SCRIPT_NAME, "if-missing"]);
    assert_eq!(a[7], LAUNCHER);
    assert_eq!(a[8], PLIST);
    assert_eq!(argv(Install::Always)[6], "always");
}

#[test]
fn the_installers_answer_decides_the_outcome() {
    let cases = [
        (out(0, "image\n", ""), Some(Delivered::ImageHasOne)),
        (out(0, "installed\n", ""), Some(Delivered::Installed)),
        (
            out(0, "noise\ninstalled\n\n", ""),
            Some(Delivered::Installed),
        ),
        (out(0, "", ""), None),
        (out(0, "something else\n", ""), None),
        (
            out(1, "installed\n", "sudo: a password is required\n"),
            None,
        ),
    ];
    for (o, want) in cases {
        assert_eq!(outcome(&o).ok(), want, "{o:?}");
    }
}

#[test]
fn a_failed_installer_keeps_only_a_short_printable_line_of_what_the_guest_said() {
    let long = format!("\n\x1b[31mevil\u{7}\n{}", "x".repeat(1000));
    let Err(DeliveryError::Failed { code, detail }) = outcome(&out(3, "", &long)) else {
        panic!("not a failure");
    };
    assert_eq!(code, 3);
    assert_eq!(detail, "[31mevil");
    let Err(DeliveryError::Failed { detail, .. }) = outcome(&out(1, "", &"y".repeat(999))) else {
        panic!("not a failure");
    };
    assert_eq!(detail.len(), DETAIL_MAX);
}

#[test]
fn only_tarts_control_socket_text_means_no_guest_agent() {
    let e = |msg: &str| tart::Error::new(Op::Exec, ErrorKind::Other, Some(1), msg);
    assert!(no_agent(&e(
        "Failed to connect to the VM using its control socket: GRPCConnectionPoolError(code: deadlineExceeded), is the Tart Guest Agent running?"
    )));
    assert!(!no_agent(&e("VM \"x\" is not running")));
    assert!(!no_agent(&e("control socket")));
}

/// A `launchctl` that records its arguments in `<root>/launchctl.log`.
fn recording(root: &Path) -> String {
    format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\n",
        root.join("launchctl.log").display()
    )
}

/// Runs the installer as the guest would, under guest root `root` with `launchctl` (a script).
async fn install(root: &Path, mode: Install, launchctl: &str) -> ExecOutput {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("launchctl");
    std::fs::write(&tool, launchctl).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let args = argv(mode);
    let o = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::process::Command::new(&args[2])
            .args(&args[3..])
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("TART_GUEST_ROOT", root)
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    out(
        o.status.code().unwrap_or(-1),
        &String::from_utf8_lossy(&o.stdout),
        &String::from_utf8_lossy(&o.stderr),
    )
}

#[tokio::test]
async fn the_installer_writes_both_files_byte_exact_and_bootstraps_the_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let o = install(root, Install::IfMissing, &recording(root)).await;
    assert_eq!(outcome(&o).unwrap(), Delivered::Installed, "{o:?}");
    let bin = root.join("usr/local/libexec/tart-guest/tart-guest-launcher");
    let plist = root.join("Library/LaunchDaemons/dev.tart-kubelet.guest-launcher.plist");
    assert_eq!(std::fs::read_to_string(&bin).unwrap(), LAUNCHER);
    assert_eq!(std::fs::read_to_string(&plist).unwrap(), PLIST);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!((mode(&bin), mode(&plist)), (0o755, 0o644));
    let log = std::fs::read_to_string(root.join("launchctl.log")).unwrap();
    assert_eq!(
        log.lines().last().unwrap(),
        format!("bootstrap system {}", plist.display())
    );

    // The launcher is there now: kept unless asked to replace it.
    let o = install(root, Install::IfMissing, &recording(root)).await;
    assert_eq!(outcome(&o).unwrap(), Delivered::ImageHasOne, "{o:?}");
    let o = install(root, Install::Always, &recording(root)).await;
    assert_eq!(outcome(&o).unwrap(), Delivered::Installed, "{o:?}");
    let log = std::fs::read_to_string(root.join("launchctl.log")).unwrap();
    assert!(
        log.contains("bootout system/dev.tart-kubelet.guest-launcher\nbootstrap system"),
        "{log}"
    );
}

#[tokio::test]
async fn a_failed_bootstrap_fails_the_delivery() {
    let tmp = tempfile::tempdir().unwrap();
    let refusing = "#!/bin/sh\n[ \"$1\" = bootout ] && exit 3\necho 'Bootstrap failed: 1: Operation not permitted' >&2\nexit 1\n";
    let o = install(tmp.path(), Install::IfMissing, refusing).await;
    let Err(DeliveryError::Failed { code, detail }) = outcome(&o) else {
        panic!("not a failure: {o:?}");
    };
    assert_eq!(code, 1);
    assert_eq!(detail, "Bootstrap failed: 1: Operation not permitted");
    let plist = tmp
        .path()
        .join("Library/LaunchDaemons/dev.tart-kubelet.guest-launcher.plist");
    assert!(
        !plist.exists(),
        "a refused plist is not left to pass for the image's"
    );
    let o = install(tmp.path(), Install::IfMissing, &recording(tmp.path())).await;
    assert_eq!(outcome(&o).unwrap(), Delivered::Installed, "{o:?}");
}
