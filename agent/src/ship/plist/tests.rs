use super::*;

/// `UPDATE_GOLDEN=1 cargo test -p tart-kubelet ship::plist` rewrites the checked-in files.
#[test]
fn golden_files_are_rewritten_on_request() {
    if std::env::var_os("UPDATE_GOLDEN").is_none() {
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../launchd");
    for v in [Variant::Daemon, Variant::Agent] {
        let path = format!("{dir}/tart-kubelet.{}.plist", v.as_str());
        std::fs::write(&path, render(&PlistSpec::reference(v)).unwrap()).unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 0);
    }
}

#[test]
fn checked_in_daemon_plist_is_the_generator_output() {
    let want = include_str!("../../../../launchd/tart-kubelet.daemon.plist");
    assert_eq!(
        render(&PlistSpec::reference(Variant::Daemon)).unwrap(),
        want
    );
}

#[test]
fn checked_in_agent_plist_is_the_generator_output() {
    let want = include_str!("../../../../launchd/tart-kubelet.agent.plist");
    assert_eq!(render(&PlistSpec::reference(Variant::Agent)).unwrap(), want);
}

#[test]
fn daemon_has_user_name_and_agent_has_aqua_session() {
    let d = render(&PlistSpec::reference(Variant::Daemon)).unwrap();
    let a = render(&PlistSpec::reference(Variant::Agent)).unwrap();
    assert!(d.contains("<key>UserName</key>\n  <string>admin</string>"));
    assert!(!d.contains("LimitLoadToSessionType"));
    assert!(a.contains("<key>LimitLoadToSessionType</key>\n  <string>Aqua</string>"));
    assert!(!a.contains("UserName"));
}

#[test]
fn tilde_paths_are_rejected() {
    let mut s = PlistSpec::reference(Variant::Daemon);
    s.binary = PathBuf::from("~/bin/tart-kubelet");
    assert!(matches!(
        render(&s),
        Err(SpecError::NotAbsolute { what: "binary", .. })
    ));
    let mut s = PlistSpec::reference(Variant::Daemon);
    s.log_dir = PathBuf::from("/Users/$USER/logs");
    assert!(matches!(
        render(&s),
        Err(SpecError::NotAbsolute {
            what: "log dir",
            ..
        })
    ));
}

#[test]
fn zero_exit_timeout_is_rejected() {
    let mut s = PlistSpec::reference(Variant::Daemon);
    s.exit_timeout_secs = 0;
    assert_eq!(render(&s), Err(SpecError::ZeroExitTimeout));
}

#[test]
fn odd_labels_and_users_are_rejected() {
    let mut s = PlistSpec::reference(Variant::Daemon);
    s.label = "a/b".into();
    assert!(matches!(s.validate(), Err(SpecError::BadLabel(_))));
    let mut s = PlistSpec::reference(Variant::Daemon);
    s.user = "ad min".into();
    assert!(matches!(s.validate(), Err(SpecError::BadUser(_))));
}

#[test]
fn arguments_are_xml_escaped() {
    let mut s = PlistSpec::reference(Variant::Daemon);
    s.args = vec!["--node-name".into(), "a<b&c".into()];
    s.tart_home = Some(PathBuf::from("/Volumes/VMs/tart"));
    let out = render(&s).unwrap();
    assert!(out.contains("<string>a&lt;b&amp;c</string>"));
    assert!(out.contains("<key>TART_HOME</key>\n    <string>/Volumes/VMs/tart</string>"));
}
