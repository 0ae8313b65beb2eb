use k8s_openapi::api::core::v1::{
    ConfigMapProjection, ConfigMapVolumeSource, DownwardAPIProjection, DownwardAPIVolumeSource,
    EmptyDirVolumeSource, HostPathVolumeSource, ObjectFieldSelector, PodSpec,
    ProjectedVolumeSource, SecretProjection, SecretVolumeSource, ServiceAccountTokenProjection,
    VolumeProjection,
};
use kube::api::ObjectMeta;

use super::*;
use crate::pods::guest::model::ObjectData;

fn pod(volumes: Vec<Volume>, mounts: Vec<VolumeMount>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("runner".into()),
            namespace: Some("ci".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "vm".into(),
                volume_mounts: Some(mounts),
                ..Default::default()
            }],
            volumes: Some(volumes),
            ..Default::default()
        }),
        status: None,
    }
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        ..Default::default()
    }
}

fn item(key: &str, path: &str, mode: Option<i32>) -> KeyToPath {
    KeyToPath {
        key: key.into(),
        path: path.into(),
        mode,
        ..Default::default()
    }
}

fn secret_volume(name: &str, secret: &str, items: Option<Vec<KeyToPath>>) -> Volume {
    Volume {
        name: name.into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some(secret.into()),
            items,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn config_map_volume(name: &str, cm: &str, optional: Option<bool>) -> Volume {
    Volume {
        name: name.into(),
        config_map: Some(ConfigMapVolumeSource {
            name: cm.into(),
            optional,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn data(pairs: &[(&str, &[u8])]) -> ObjectData {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.to_vec()))
        .collect()
}

fn sources() -> Sources {
    let mut s = Sources::default();
    s.insert(
        ObjectKind::Secret,
        "creds",
        Some(data(&[("user", b"admin"), ("pass", b"hunter2")])),
    );
    s.insert(
        ObjectKind::ConfigMap,
        "settings",
        Some(data(&[("a.yaml", b"a: 1\n")])),
    );
    s.insert(ObjectKind::ConfigMap, "gone", None);
    s
}

fn no_downward(_: &DownwardAPIVolumeFile) -> Result<String, ConfigError> {
    panic!("no downwardAPI item expected")
}

fn plan(pod: &Pod, sources: &Sources) -> Result<(Vec<PlannedVolume>, Vec<MountSpec>), ConfigError> {
    let container = &pod.spec.as_ref().unwrap().containers[0];
    plan_volumes(pod, container, sources, &no_downward, &|s| {
        s.replace("$(POD)", "runner")
    })
}

/// `(path, bytes, mode)` of a planned volume's files.
fn files(v: &PlannedVolume) -> Vec<(String, Vec<u8>, u32)> {
    let VolumeContent::Files(files) = &v.content else {
        panic!("{} is not a file volume", v.name)
    };
    files
        .iter()
        .map(|f| match &f.data {
            FileData::Bytes(b) => (f.path.clone(), b.clone(), f.mode),
            FileData::Token(t) => (f.path.clone(), format!("{t:?}").into_bytes(), f.mode),
        })
        .collect()
}

fn file(path: &str, bytes: &[u8], mode: u32) -> (String, Vec<u8>, u32) {
    (path.to_owned(), bytes.to_vec(), mode)
}

#[test]
fn secret_items_select_keys_with_their_modes_and_without_items_every_key_is_a_file() {
    let mut all = secret_volume("all", "creds", None);
    all.secret.as_mut().unwrap().default_mode = Some(0o400);
    let picked = secret_volume(
        "picked",
        "creds",
        Some(vec![
            item("pass", "dir/p", Some(0o600)),
            item("user", "./u", None),
        ]),
    );
    let p = pod(
        vec![all, picked],
        vec![mount("all", "/etc/all"), mount("picked", "/etc/picked")],
    );
    let (volumes, mounts) = plan(&p, &sources()).unwrap();
    assert_eq!(
        files(&volumes[0]),
        vec![
            file("pass", b"hunter2", 0o400),
            file("user", b"admin", 0o400)
        ]
    );
    assert_eq!(
        files(&volumes[1]),
        vec![file("dir/p", b"hunter2", 0o600), file("u", b"admin", 0o644)]
    );
    assert_eq!(volumes[1].share, "vol-1");
    assert_eq!(
        volumes[1].reads,
        vec![(ObjectKind::Secret, "creds".to_owned())]
    );
    assert_eq!(mounts[1].share, "vol-1");
    assert_eq!(mounts[1].path, "/etc/picked");
}

#[test]
fn missing_objects_and_keys_fail_unless_optional() {
    let cases: Vec<(&str, Volume, Result<usize, ConfigError>)> = vec![
        (
            "required missing object",
            config_map_volume("v", "gone", None),
            Err(ConfigError::MissingObject {
                kind: ObjectKind::ConfigMap,
                name: "gone".into(),
            }),
        ),
        (
            "never fetched counts as missing",
            config_map_volume("v", "unknown", Some(false)),
            Err(ConfigError::MissingObject {
                kind: ObjectKind::ConfigMap,
                name: "unknown".into(),
            }),
        ),
        (
            "optional missing object: empty volume",
            config_map_volume("v", "gone", Some(true)),
            Ok(0),
        ),
        (
            "required missing key",
            secret_volume("v", "creds", Some(vec![item("nope", "n", None)])),
            Err(ConfigError::MissingKey {
                kind: ObjectKind::Secret,
                namespace: "ci".into(),
                name: "creds".into(),
                key: "nope".into(),
            }),
        ),
        (
            "optional missing key is skipped",
            {
                let mut v = secret_volume(
                    "v",
                    "creds",
                    Some(vec![item("nope", "n", None), item("user", "u", None)]),
                );
                v.secret.as_mut().unwrap().optional = Some(true);
                v
            },
            Ok(1),
        ),
    ];
    for (name, volume, want) in cases {
        let p = pod(vec![volume], vec![mount("v", "/v")]);
        let got = plan(&p, &sources()).map(|(v, _)| files(&v[0]).len());
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn projected_sources_share_one_volume_and_the_token_gets_its_defaults() {
    let token = |audience: Option<&str>, seconds: Option<i64>, path: &str| VolumeProjection {
        service_account_token: Some(ServiceAccountTokenProjection {
            audience: audience.map(Into::into),
            expiration_seconds: seconds,
            path: path.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let volume = Volume {
        name: "kube-api-access".into(),
        projected: Some(ProjectedVolumeSource {
            default_mode: Some(0o420),
            sources: Some(vec![
                token(None, None, "token"),
                token(Some("vault"), Some(60), "vault/token"),
                token(Some(""), Some(7200), "long"),
                VolumeProjection {
                    config_map: Some(ConfigMapProjection {
                        name: "settings".into(),
                        items: Some(vec![item("a.yaml", "ca.crt", Some(0o444))]),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    secret: Some(SecretProjection {
                        name: "missing".into(),
                        optional: Some(true),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    downward_api: Some(DownwardAPIProjection {
                        items: Some(vec![DownwardAPIVolumeFile {
                            path: "namespace".into(),
                            field_ref: Some(ObjectFieldSelector {
                                field_path: "metadata.namespace".into(),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }]),
                    }),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let p = pod(
        vec![volume],
        vec![mount(
            "kube-api-access",
            "/var/run/secrets/kubernetes.io/serviceaccount",
        )],
    );
    let downward = |f: &DownwardAPIVolumeFile| -> Result<String, ConfigError> {
        Ok(format!("<{}>", f.field_ref.as_ref().unwrap().field_path))
    };
    let container = &p.spec.as_ref().unwrap().containers[0];
    let (volumes, _) = plan_volumes(&p, container, &sources(), &downward, &|s| s.into()).unwrap();
    let VolumeContent::Files(got) = &volumes[0].content else {
        panic!("not files")
    };
    let tok = |audience: Option<&str>, expiration_seconds| {
        FileData::Token(TokenSpec {
            audience: audience.map(Into::into),
            expiration_seconds,
        })
    };
    let want = [
        ("token", tok(None, 3600), 0o420),
        ("vault/token", tok(Some("vault"), 600), 0o420),
        ("long", tok(None, 7200), 0o420),
        ("ca.crt", FileData::Bytes(b"a: 1\n".to_vec()), 0o444),
        (
            "namespace",
            FileData::Bytes(b"<metadata.namespace>".to_vec()),
            0o420,
        ),
    ];
    let want: Vec<VolumeFile> = want
        .into_iter()
        .map(|(path, data, mode)| VolumeFile {
            path: path.into(),
            data,
            mode,
        })
        .collect();
    assert_eq!(got, &want);
    assert_eq!(
        volumes[0].reads,
        vec![
            (ObjectKind::ConfigMap, "settings".to_owned()),
            (ObjectKind::Secret, "missing".to_owned())
        ]
    );
}

#[test]
fn downward_volume_uses_item_mode_then_default_mode_and_passes_errors_through() {
    let volume = |items: Vec<DownwardAPIVolumeFile>| Volume {
        name: "info".into(),
        downward_api: Some(DownwardAPIVolumeSource {
            default_mode: Some(0o440),
            items: Some(items),
            ..Default::default()
        }),
        ..Default::default()
    };
    let entry = |path: &str, field: &str, mode| DownwardAPIVolumeFile {
        path: path.into(),
        mode,
        field_ref: Some(ObjectFieldSelector {
            field_path: field.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let resolve =
        |f: &DownwardAPIVolumeFile| match f.field_ref.as_ref().unwrap().field_path.as_str() {
            "metadata.labels" => Ok("app=\"x\"\n".to_owned()),
            other => Err(ConfigError::InvalidReference(format!(
                "unsupported {other}"
            ))),
        };
    let p = pod(
        vec![volume(vec![
            entry("labels", "metadata.labels", None),
            entry("l2", "metadata.labels", Some(0o600)),
        ])],
        vec![mount("info", "/etc/podinfo")],
    );
    let c = &p.spec.as_ref().unwrap().containers[0];
    let (v, _) = plan_volumes(&p, c, &sources(), &resolve, &|s| s.into()).unwrap();
    assert_eq!(
        files(&v[0]),
        vec![
            file("labels", b"app=\"x\"\n", 0o440),
            file("l2", b"app=\"x\"\n", 0o600)
        ]
    );
    let p = pod(
        vec![volume(vec![entry("x", "spec.bogus", None)])],
        vec![mount("info", "/i")],
    );
    let c = &p.spec.as_ref().unwrap().containers[0];
    assert_eq!(
        plan_volumes(&p, c, &sources(), &resolve, &|s| s.into()).unwrap_err(),
        ConfigError::InvalidReference("unsupported spec.bogus".into())
    );
}

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
