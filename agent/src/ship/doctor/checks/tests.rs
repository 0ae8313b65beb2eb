use super::*;
use crate::config::ClientCa;
use crate::ship::doctor::serving::{Serving, kubelet_api_check};
use crate::ship::rbac::ALWAYS;

fn probe(out: &str) -> TartProbe {
    TartProbe::Version {
        path: "/opt/homebrew/bin/tart".into(),
        output: out.into(),
    }
}

#[test]
fn supported_tart_version_passes_and_old_one_fails() {
    assert_eq!(
        tart_check(&probe("2.35.0\n"), (2, 20, 0)).status,
        Status::Ok
    );
    let old = tart_check(&probe("2.18.1\n"), (2, 20, 0));
    assert_eq!(old.status, Status::Fail);
    assert!(
        old.message.contains("older than the minimum 2.20.0"),
        "{}",
        old.message
    );
    assert_eq!(
        tart_check(&probe("SNAPSHOT\n"), (2, 20, 0)).status,
        Status::Warn
    );
    let missing = tart_check(&TartProbe::NotFound("no `tart` on PATH".into()), (2, 20, 0));
    assert_eq!(missing.status, Status::Fail);
    assert!(missing.fix.unwrap().contains("--tart-program"));
}

#[test]
fn free_space_under_the_disk_pressure_threshold_fails() {
    let mut p = TartHomeProbe {
        path: "/Users/admin/.tart".into(),
        writable: Ok(()),
        volume: Some((1_000_000_000_000, 50_000_000_000)),
        min_free: 100_000_000_000,
    };
    let c = tart_home_checks(&p);
    assert_eq!(c[0].status, Status::Ok);
    assert_eq!(c[1].status, Status::Fail);
    p.volume = Some((1_000_000_000_000, 150_000_000_000));
    assert_eq!(tart_home_checks(&p)[1].status, Status::Warn);
    p.volume = Some((1_000_000_000_000, 500_000_000_000));
    assert_eq!(tart_home_checks(&p)[1].status, Status::Ok);
    p.writable = Err("Permission denied".into());
    assert_eq!(tart_home_checks(&p)[0].status, Status::Fail);
}

#[test]
fn missing_rbac_verbs_are_named() {
    let results: Vec<_> = ALWAYS
        .iter()
        .map(|p| (*p, Ok(!(p.resource == "pods" && p.subresource == "status"))))
        .collect();
    let c = rbac_check("system:node:mac1", Identity::Node, &results);
    assert_eq!(c.status, Status::Fail);
    assert!(
        c.message
            .contains("missing 1 permission(s): patch pods/status"),
        "{}",
        c.message
    );
    let all: Vec<_> = ALWAYS.iter().map(|p| (*p, Ok(true))).collect();
    assert!(
        c.fix
            .as_deref()
            .unwrap_or_default()
            .contains("system:node:")
    );
    assert_eq!(rbac_check("u", Identity::Agent, &all).status, Status::Ok);
}

#[test]
fn more_than_two_slots_or_foreign_vms_warn() {
    assert_eq!(vm_slots_check(2, &[]).status, Status::Ok);
    assert_eq!(vm_slots_check(3, &[]).status, Status::Warn);
    let c = vm_slots_check(2, &["my-manual-vm".into()]);
    assert_eq!(c.status, Status::Warn);
    assert!(c.message.contains("my-manual-vm"));
}

#[test]
fn gui_session_and_auto_login_verdicts() {
    assert_eq!(gui_session_check(Some("Aqua"), "admin").status, Status::Ok);
    assert_eq!(
        gui_session_check(Some("Background"), "admin").status,
        Status::Fail
    );
    assert_eq!(gui_session_check(None, "admin").status, Status::Fail);
    assert_eq!(auto_login_check(Some("admin"), "admin").status, Status::Ok);
    assert_eq!(
        auto_login_check(Some("other"), "admin").status,
        Status::Fail
    );
    assert_eq!(auto_login_check(None, "admin").status, Status::Fail);
}

#[test]
fn an_unusable_keychain_warns_with_the_live_checks_message() {
    assert_eq!(keychain_check(Ok(())).status, Status::Ok);
    let c = keychain_check(Err("User interaction is not allowed.".into()));
    assert_eq!(c.status, Status::Warn);
    assert!(
        c.message.contains("User interaction is not allowed."),
        "{}",
        c.message
    );
    assert!(c.fix.is_some());
}

#[test]
fn softnet_fixes_name_the_cause() {
    let missing = softnet_check("/s", Err("not found".into()));
    assert!(missing.fix.unwrap().contains("brew install"));
    let not_setuid = softnet_check("/s", Ok((0, 0o100755)));
    assert!(not_setuid.fix.unwrap().contains("chmod u+s /s"));
}

#[test]
fn long_or_default_dhcp_leases_warn() {
    assert_eq!(dhcp_lease_check(Some(600)).status, Status::Ok);
    assert_eq!(dhcp_lease_check(Some(86400)).status, Status::Warn);
    assert!(
        dhcp_lease_check(None)
            .fix
            .unwrap()
            .contains("DHCPLeaseTimeSecs -int 600")
    );
}

#[test]
fn softnet_must_be_root_owned_and_setuid() {
    assert_eq!(softnet_check("/s", Ok((0, 0o104755))).status, Status::Ok);
    assert_eq!(softnet_check("/s", Ok((0, 0o100755))).status, Status::Fail);
    assert_eq!(
        softnet_check("/s", Ok((501, 0o104755))).status,
        Status::Fail
    );
    assert_eq!(
        softnet_check("/s", Err("not found".into())).status,
        Status::Fail
    );
}

#[test]
fn exit_code_is_non_zero_only_for_failures_unless_strict() {
    let ok = Check::new("a", Status::Ok, "");
    let warn = Check::new("b", Status::Warn, "");
    let skip = Check::macos_only("c");
    let fail = Check::new("d", Status::Fail, "");
    assert_eq!(
        exit_code(&[ok.clone(), warn.clone(), skip.clone()], false),
        0
    );
    assert_eq!(exit_code(&[ok.clone(), warn.clone()], true), 1);
    assert_eq!(exit_code(&[ok, skip, fail], false), 1);
}

#[test]
fn text_report_puts_the_fix_under_the_check() {
    let t = render_text(&[
        Check::new("tart", Status::Ok, "tart 2.35.0"),
        Check::new("rbac", Status::Fail, "missing patch pods/status").fix("apply rbac.yaml"),
        Check::macos_only("gui-session"),
    ]);
    assert!(t.contains("[ ok ] tart         tart 2.35.0\n"), "{t}");
    assert!(
        t.contains("[FAIL] rbac         missing patch pods/status\n"),
        "{t}"
    );
    assert!(t.contains("fix: apply rbac.yaml\n"), "{t}");
    assert!(
        t.contains("[skip] gui-session  skipped: macOS-only check\n"),
        "{t}"
    );
    assert!(
        t.ends_with("1 ok, 0 warnings, 1 failures, 1 skipped\n"),
        "{t}"
    );
}

#[test]
fn version_is_found_in_the_first_line() {
    assert_eq!(version_in("2.35.0\n"), Some((2, 35, 0)));
    assert_eq!(version_in("tart 2.36.1 (build 7)\n"), Some((2, 36, 1)));
    assert_eq!(version_in("SNAPSHOT\n"), None);
}

#[test]
fn kubelet_api_with_certificate_files_needs_them_loadable_and_a_client_ca() {
    let files = |r: Result<(), String>| Serving::Files(r);
    let ca = ClientCa::Kubeconfig(vec![vec![0x30]]);
    let c = kubelet_api_check(
        10250,
        &files(Err("no PEM certificate in /x".into())),
        Some(&ca),
    );
    assert_eq!(c.status, Status::Fail);
    assert_eq!(
        kubelet_api_check(10250, &files(Ok(())), None).status,
        Status::Warn
    );
    let c = kubelet_api_check(10250, &files(Ok(())), Some(&ca));
    assert_eq!(
        (c.status, c.message.as_str()),
        (
            Status::Ok,
            "serves HTTPS on port 10250; client certificates verified against the kubeconfig's cluster CA"
        )
    );
}

#[test]
fn kubelet_api_without_files_reports_where_the_csr_stands() {
    use crate::kubelet_api::csr::{Progress, api::Verdict};
    use std::time::{Duration, SystemTime};
    let requested = |v: Result<Verdict, String>| {
        Serving::Requested(Progress::Requested {
            csr: "mac-1.serving-0a1b2c3d".into(),
            verdict: v,
            pending_for: None,
            serving_until: None,
        })
    };
    let later = SystemTime::UNIX_EPOCH + Duration::from_secs(4_102_444_800);
    let cases: Vec<(Serving, Status, &str, &str)> = vec![
        (
            Serving::Requested(Progress::None),
            Status::Warn,
            "no serving certificate yet",
            "kubectl certificate approve <name>",
        ),
        (
            requested(Ok(Verdict::Pending)),
            Status::Warn,
            "request mac-1.serving-0a1b2c3d is pending approval",
            "kubectl certificate approve mac-1.serving-0a1b2c3d",
        ),
        (
            requested(Ok(Verdict::Approved)),
            Status::Warn,
            "approved but not issued yet",
            "csrsigning",
        ),
        (
            requested(Ok(Verdict::Denied("NotMine: no".into()))),
            Status::Fail,
            "was denied (NotMine: no)",
            "kubectl describe csr mac-1.serving-0a1b2c3d",
        ),
        (
            requested(Ok(Verdict::Failed("SignerValidationFailure".into()))),
            Status::Fail,
            "request mac-1.serving-0a1b2c3d failed (SignerValidationFailure)",
            "kubectl describe csr",
        ),
        (
            requested(Err("no API client".into())),
            Status::Warn,
            "status was not checked (no API client)",
            "kubectl get csr mac-1.serving-0a1b2c3d",
        ),
        (
            Serving::Requested(Progress::Requested {
                csr: "mac-1.serving-0a1b2c3d".into(),
                verdict: Ok(Verdict::Pending),
                pending_for: Some(Duration::from_secs(60)),
                serving_until: Some(later),
            }),
            Status::Warn,
            "pending approval; the current certificate (valid until 2100-01-01T00:00:00Z) is served meanwhile",
            "kubectl certificate approve mac-1.serving-0a1b2c3d",
        ),
        // Pending for longer than a few minutes: nothing approves these requests.
        (
            Serving::Requested(Progress::Requested {
                csr: "mac-1.serving-0a1b2c3d".into(),
                verdict: Ok(Verdict::Pending),
                pending_for: Some(Duration::from_secs(720)),
                serving_until: None,
            }),
            Status::Fail,
            "request mac-1.serving-0a1b2c3d has been pending approval for 12 min: no operator or approver has approved it; the kubelet API is not served until it is issued",
            "or run an approver for kubelet serving requests",
        ),
        (
            Serving::Requested(Progress::Requested {
                csr: "mac-1.serving-0a1b2c3d".into(),
                verdict: Ok(Verdict::Pending),
                pending_for: Some(Duration::from_secs(300)),
                serving_until: Some(later),
            }),
            Status::Warn,
            "pending approval for 5 min: no operator or approver has approved it; the current certificate (valid until 2100-01-01T00:00:00Z) is served meanwhile",
            "kubectl certificate approve mac-1.serving-0a1b2c3d, or run an approver",
        ),
        (
            Serving::Requested(Progress::Requested {
                csr: "mac-1.serving-0a1b2c3d".into(),
                verdict: Ok(Verdict::Pending),
                pending_for: Some(Duration::from_secs(299)),
                serving_until: None,
            }),
            Status::Warn,
            "request mac-1.serving-0a1b2c3d is pending approval: the kubelet API is not served",
            "kubectl certificate approve mac-1.serving-0a1b2c3d",
        ),
        (
            Serving::Requested(Progress::Issued {
                not_after: later,
                expired: true,
            }),
            Status::Warn,
            "expired at 2100-01-01T00:00:00Z",
            "kubectl certificate approve",
        ),
        (
            Serving::Requested(Progress::Issued {
                not_after: later,
                expired: false,
            }),
            Status::Ok,
            "serves HTTPS on port 10250 with a certificate from the CSR API, valid until 2100-01-01T00:00:00Z",
            "",
        ),
    ];
    for (serving, status, message, fix) in cases {
        let ca = ClientCa::File("/etc/ca.pem".into());
        let c = kubelet_api_check(10250, &serving, Some(&ca));
        assert_eq!(c.status, status, "{serving:?}: {}", c.message);
        assert!(c.message.contains(message), "{serving:?}: {}", c.message);
        assert!(!c.message.contains("not implemented"), "{}", c.message);
        let got_fix = c.fix.clone().unwrap_or_default();
        assert!(got_fix.contains(fix), "{serving:?}: fix {got_fix:?}");
    }
    let issued = Serving::Requested(Progress::Issued {
        not_after: later,
        expired: false,
    });
    assert_eq!(kubelet_api_check(10250, &issued, None).status, Status::Warn);
}
