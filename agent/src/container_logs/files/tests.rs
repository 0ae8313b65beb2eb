use super::*;

#[test]
fn file_names_are_classified() {
    let r = |n, s: &str, q| Some(FileKind::Rotated(n, (s.to_owned(), q)));
    let cases = [
        ("0.log", Some(FileKind::Current(0))),
        ("12.log", Some(FileKind::Current(12))),
        ("3.ended", Some(FileKind::Ended(3))),
        ("3.offsets", Some(FileKind::Offsets(3))),
        ("1.log.20240506-070809", r(1, "20240506-070809", 0)),
        ("1.log.20240506-070809-12", r(1, "20240506-070809", 12)),
        ("1.log.20240506-070809.gz", None),
        ("1.log.2024-05-06", None),
        ("+1.log", None),
        ("a.log", None),
        ("1.txt", None),
    ];
    for (name, want) in cases {
        assert_eq!(classify(name), want, "{name}");
    }
}

#[test]
fn rotated_files_are_listed_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let t = |s: &str| s.parse::<Timestamp>().unwrap();
    let names = [
        rotated_name(0, t("2024-05-06T07:08:10Z"), 0),
        rotated_name(0, t("2024-05-06T07:08:09Z"), 10),
        rotated_name(0, t("2024-05-06T07:08:09Z"), 2),
        rotated_name(0, t("2024-05-06T07:08:09Z"), 0),
    ];
    for n in &names {
        std::fs::write(dir.path().join(n), "").unwrap();
    }
    let runs = list(dir.path()).unwrap();
    let got: Vec<_> = runs[&0]
        .rotated
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        got,
        [
            "0.log.20240506-070809",
            "0.log.20240506-070809-2",
            "0.log.20240506-070809-10",
            "0.log.20240506-070810"
        ]
    );
    assert!(!runs[&0].current);
}

#[test]
fn names_that_could_leave_the_root_are_refused() {
    let root = Path::new("/logs");
    let id = |ns: &str, name: &str| PodLogId {
        namespace: ns.into(),
        name: name.into(),
        uid: "u".into(),
    };
    assert_eq!(
        id("ns", "p").container_dir(root, "c").unwrap(),
        Path::new("/logs/ns_p_u/c")
    );
    for (ns, name, c) in [
        ("..", "p", "c"),
        ("ns", "a/b", "c"),
        ("ns", "p", ""),
        ("ns", "p", ".."),
    ] {
        let err = id(ns, name).container_dir(root, c).unwrap_err();
        assert_eq!(err.kind(), super::super::error::LogErrorKind::InvalidName);
    }
}

#[test]
fn a_253_character_name_in_a_63_character_namespace_fits_a_file_name() {
    let root = tempfile::tempdir().unwrap();
    let id = |name: String| PodLogId {
        namespace: "n".repeat(63),
        name,
        uid: "0f3c2e4a-5b6d-4e7f-8a9b-0c1d2e3f4a5b".into(),
    };
    let long = id(format!("{}a", "p".repeat(252)));
    let dir = long.container_dir(root.path(), &"c".repeat(63)).unwrap();
    std::fs::create_dir_all(&dir).expect("the directory can be made");
    let pod_dir = long.dir(root.path()).unwrap();
    let base = pod_dir.file_name().unwrap().to_str().unwrap();
    assert_eq!(base.len(), NAME_MAX);
    assert!(
        base.starts_with(&format!("{}_ppp", "n".repeat(63))),
        "{base}"
    );
    assert!(
        base.ends_with("_0f3c2e4a-5b6d-4e7f-8a9b-0c1d2e3f4a5b"),
        "{base}"
    );
    // Another Pod of the same long name (a new UID) gets its own directory.
    let mut other = id(long.name.clone());
    other.uid = "1f3c2e4a-5b6d-4e7f-8a9b-0c1d2e3f4a5b".into();
    assert_ne!(other.dir(root.path()).unwrap(), pod_dir);
    // A name that fits keeps kubelet's exact layout.
    let short = id("p".into());
    assert_eq!(
        short.dir(root.path()).unwrap().file_name().unwrap().len(),
        63 + 1 + 1 + 1 + 36
    );
}

#[test]
fn removing_pod_logs_removes_the_directory_and_tolerates_none() {
    let dir = tempfile::tempdir().unwrap();
    let pod = PodLogId {
        namespace: "ns".into(),
        name: "p".into(),
        uid: "u".into(),
    };
    let cdir = pod.container_dir(dir.path(), "c").unwrap();
    std::fs::create_dir_all(&cdir).unwrap();
    std::fs::write(cdir.join("0.log"), "x\n").unwrap();
    remove_pod_logs(dir.path(), &pod).unwrap();
    assert!(!pod.dir(dir.path()).unwrap().exists());
    remove_pod_logs(dir.path(), &pod).unwrap();
}
