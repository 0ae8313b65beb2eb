//! Paths, sub-paths, unmounted volumes, a large value and references.

use super::tests::*;
use super::*;

#[test]
fn paths_that_leave_the_volume_or_collide_are_refused() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&[""], "", "must not be empty"),
        (&["/etc/passwd"], "/etc/passwd", "must be a relative path"),
        (&["../x"], "../x", "must not contain '..'"),
        (&["a/../../x"], "a/../../x", "must not contain '..'"),
        (&["a/.."], "a/..", "must not contain '..'"),
        (&["..data"], "..data", "must not start with '..'"),
        (&["./.", "x"], "./.", "must name a file"),
        (&["a", "./a"], "a", "is given twice"),
        (&["a/b", "a"], "a", "is both a file and a directory"),
        (&["a", "a/b/c"], "a", "is both a file and a directory"),
    ];
    for (paths, bad, why) in cases {
        let items = paths.iter().map(|p| item("user", p, None)).collect();
        let p = pod(
            vec![secret_volume("v", "creds", Some(items))],
            vec![mount("v", "/v")],
        );
        let want = ConfigError::InvalidPath {
            volume: "v".into(),
            path: (*bad).into(),
            why,
        };
        assert_eq!(plan(&p, &sources()).unwrap_err(), want, "{paths:?}");
    }
    let long = "x".repeat(256);
    let p = pod(
        vec![secret_volume(
            "v",
            "creds",
            Some(vec![item("user", &long, None)]),
        )],
        vec![mount("v", "/v")],
    );
    assert!(matches!(
        plan(&p, &sources()),
        Err(ConfigError::InvalidPath {
            why: "has a component longer than 255 bytes",
            ..
        })
    ));
    // Siblings sharing a prefix are not a collision.
    let items = vec![
        item("user", "ab", None),
        item("pass", "a/b", None),
        item("user", "a/c", None),
    ];
    let p = pod(
        vec![secret_volume("v", "creds", Some(items))],
        vec![mount("v", "/v")],
    );
    assert_eq!(files(&plan(&p, &sources()).unwrap().0[0]).len(), 3);
}

#[test]
fn sub_paths_are_expanded_and_checked() {
    let with = |sub: Option<&str>, expr: Option<&str>| VolumeMount {
        sub_path: sub.map(Into::into),
        sub_path_expr: expr.map(Into::into),
        ..mount("scratch", "/scratch")
    };
    let cases: Vec<(VolumeMount, Result<Option<&str>, &str>)> = vec![
        (with(None, None), Ok(None)),
        (with(Some(""), None), Ok(None)),
        (with(Some("logs/app"), None), Ok(Some("logs/app"))),
        (with(None, Some("pods/$(POD)")), Ok(Some("pods/runner"))),
        (
            with(Some("/etc"), None),
            Err("subPath must be a relative path"),
        ),
        (
            with(Some("a/../../b"), None),
            Err("subPath must not contain '..'"),
        ),
        (
            with(None, Some("$(POD)/..")),
            Err("subPath must not contain '..'"),
        ),
        (
            with(Some("a"), Some("b")),
            Err("subPath and subPathExpr are mutually exclusive"),
        ),
        (
            mount("scratch", "relative"),
            Err("mountPath must be absolute"),
        ),
    ];
    for (m, want) in cases {
        let label = format!("{:?} {:?} {:?}", m.mount_path, m.sub_path, m.sub_path_expr);
        let scratch = Volume {
            name: "scratch".into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        };
        let p = pod(vec![scratch], vec![m]);
        let got = plan(&p, &sources());
        match want {
            Ok(sub) => {
                let (volumes, mounts) = got.unwrap();
                assert_eq!(volumes[0].content, VolumeContent::EmptyDir, "{label}");
                assert_eq!(mounts[0].sub.as_deref(), sub, "{label}");
            }
            Err(why) => assert!(
                matches!(got, Err(ConfigError::InvalidPath { why: w, .. }) if w == why),
                "{label}"
            ),
        }
    }
}

#[test]
fn unmounted_volumes_are_skipped_and_several_mounts_share_one_volume() {
    let p = pod(
        vec![
            config_map_volume("unused", "gone", None),
            config_map_volume("conf", "settings", None),
        ],
        vec![mount("conf", "/a"), mount("conf", "/b")],
    );
    let (volumes, mounts) = plan(&p, &sources()).unwrap();
    assert_eq!(volumes.len(), 1);
    assert_eq!(volumes[0].share, "vol-1");
    assert_eq!(
        mounts
            .iter()
            .map(|m| (m.share.as_str(), m.path.as_str()))
            .collect::<Vec<_>>(),
        vec![("vol-1", "/a"), ("vol-1", "/b")]
    );
    let p = pod(vec![], vec![mount("nothing", "/x")]);
    assert!(matches!(
        plan(&p, &sources()),
        Err(ConfigError::InvalidReference(_))
    ));
    let host = Volume {
        name: "host".into(),
        host_path: Some(HostPathVolumeSource {
            path: "/".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let p = pod(vec![host], vec![mount("host", "/host")]);
    assert!(matches!(
        plan(&p, &sources()),
        Err(ConfigError::InvalidReference(_))
    ));
}

#[test]
fn a_one_mebibyte_binary_value_is_carried_byte_for_byte() {
    let value: Vec<u8> = (0..1 << 20)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    assert!(value.contains(&0) && value.contains(&0xff));
    let mut s = Sources::default();
    s.insert(ObjectKind::Secret, "blob", Some(data(&[("bin", &value)])));
    let p = pod(
        vec![secret_volume("v", "blob", None)],
        vec![mount("v", "/v")],
    );
    let (volumes, _) = plan(&p, &s).unwrap();
    assert_eq!(
        files(&volumes[0]),
        vec![(String::from("bin"), value, 0o644)]
    );
}

#[test]
fn references_name_each_object_once_and_are_optional_only_if_every_use_is() {
    let mut optional_creds = secret_volume("b", "creds", None);
    optional_creds.secret.as_mut().unwrap().optional = Some(true);
    let projected = Volume {
        name: "c".into(),
        projected: Some(ProjectedVolumeSource {
            sources: Some(vec![
                VolumeProjection {
                    secret: Some(SecretProjection {
                        name: "creds".into(),
                        optional: Some(false),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    config_map: Some(ConfigMapProjection {
                        name: "extra".into(),
                        optional: Some(true),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let p = pod(
        vec![
            config_map_volume("a", "settings", Some(true)),
            optional_creds,
            projected,
            config_map_volume("unmounted", "never", None),
        ],
        vec![mount("a", "/a"), mount("b", "/b"), mount("c", "/c")],
    );
    assert_eq!(
        references(&p),
        vec![
            (ObjectKind::ConfigMap, "settings".to_owned(), true),
            (ObjectKind::Secret, "creds".to_owned(), false),
            (ObjectKind::ConfigMap, "extra".to_owned(), true),
        ]
    );
}
