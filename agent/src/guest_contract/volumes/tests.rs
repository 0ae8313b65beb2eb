pub(super) use k8s_openapi::api::core::v1::{
    ConfigMapProjection, ConfigMapVolumeSource, DownwardAPIProjection, DownwardAPIVolumeSource,
    EmptyDirVolumeSource, HostPathVolumeSource, ObjectFieldSelector, PodSpec,
    ProjectedVolumeSource, SecretProjection, SecretVolumeSource, ServiceAccountTokenProjection,
    VolumeProjection,
};
pub(super) use kube::api::ObjectMeta;

pub(super) use super::*;
pub(super) use crate::guest_contract::model::ObjectData;

pub(super) fn pod(volumes: Vec<Volume>, mounts: Vec<VolumeMount>) -> Pod {
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

pub(super) fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        ..Default::default()
    }
}

pub(super) fn item(key: &str, path: &str, mode: Option<i32>) -> KeyToPath {
    KeyToPath {
        key: key.into(),
        path: path.into(),
        mode,
        ..Default::default()
    }
}

pub(super) fn secret_volume(name: &str, secret: &str, items: Option<Vec<KeyToPath>>) -> Volume {
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

pub(super) fn config_map_volume(name: &str, cm: &str, optional: Option<bool>) -> Volume {
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

pub(super) fn data(pairs: &[(&str, &[u8])]) -> ObjectData {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.to_vec()))
        .collect()
}

pub(super) fn sources() -> Sources {
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

pub(super) fn no_downward(_: &DownwardAPIVolumeFile) -> Result<String, ConfigError> {
    panic!("no downwardAPI item expected")
}

pub(super) fn plan(
    pod: &Pod,
    sources: &Sources,
) -> Result<(Vec<PlannedVolume>, Vec<MountSpec>), ConfigError> {
    let container = &pod.spec.as_ref().unwrap().containers[0];
    plan_volumes(pod, container, sources, &no_downward, &|s| {
        s.replace("$(POD)", "runner")
    })
}

/// `(path, bytes, mode)` of a planned volume's files.
pub(super) fn files(v: &PlannedVolume) -> Vec<(String, Vec<u8>, u32)> {
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

pub(super) fn file(path: &str, bytes: &[u8], mode: u32) -> (String, Vec<u8>, u32) {
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
