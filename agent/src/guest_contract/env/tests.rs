use k8s_openapi::{
    api::core::v1::{
        ConfigMapEnvSource, ConfigMapKeySelector, Container, EnvFromSource, EnvVar, EnvVarSource,
        FileKeySelector, ObjectFieldSelector, Pod, ResourceFieldSelector, SecretEnvSource,
        SecretKeySelector,
    },
    apimachinery::pkg::api::resource::Quantity,
};

use super::*;
use crate::pods::fixtures::test_pod;

fn val(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    }
}

fn from(name: &str, src: EnvVarSource) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: None,
        value_from: Some(src),
    }
}

fn secret_key(name: &str, obj: &str, key: &str, optional: Option<bool>) -> EnvVar {
    from(
        name,
        EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: obj.into(),
                key: key.into(),
                optional,
            }),
            ..Default::default()
        },
    )
}

fn cm_key(name: &str, obj: &str, key: &str, optional: Option<bool>) -> EnvVar {
    from(
        name,
        EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: obj.into(),
                key: key.into(),
                optional,
            }),
            ..Default::default()
        },
    )
}

fn field(name: &str, path: &str) -> EnvVar {
    from(
        name,
        EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: path.into(),
            }),
            ..Default::default()
        },
    )
}

fn res(name: &str, resource: &str, divisor: Option<&str>, container: Option<&str>) -> EnvVar {
    from(
        name,
        EnvVarSource {
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: container.map(Into::into),
                divisor: divisor.map(|d| Quantity(d.into())),
                resource: resource.into(),
            }),
            ..Default::default()
        },
    )
}

fn from_cm(name: &str, prefix: Option<&str>, optional: Option<bool>) -> EnvFromSource {
    EnvFromSource {
        config_map_ref: Some(ConfigMapEnvSource {
            name: name.into(),
            optional,
        }),
        prefix: prefix.map(Into::into),
        secret_ref: None,
    }
}

fn from_secret(name: &str, prefix: Option<&str>, optional: Option<bool>) -> EnvFromSource {
    EnvFromSource {
        config_map_ref: None,
        prefix: prefix.map(Into::into),
        secret_ref: Some(SecretEnvSource {
            name: name.into(),
            optional,
        }),
    }
}

fn pod(env: Vec<EnvVar>, env_from: Vec<EnvFromSource>) -> Pod {
    let mut pod = test_pod().limit("memory", "2Gi").build();
    let c = &mut pod.spec.as_mut().unwrap().containers[0];
    c.env = Some(env);
    c.env_from = Some(env_from);
    pod
}

fn container(pod: &Pod) -> &Container {
    &pod.spec.as_ref().unwrap().containers[0]
}

fn data(pairs: &[(&str, &[u8])]) -> Option<ObjectData> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.to_vec()))
            .collect(),
    )
}

fn sources() -> Sources {
    let mut s = Sources::default();
    s.insert(
        ObjectKind::ConfigMap,
        "cfg",
        data(&[("A", b"1"), ("B", b"2"), ("1BAD", b"x"), ("..dots", b"y")]),
    );
    s.insert(
        ObjectKind::Secret,
        "sec",
        data(&[("token", b"$(A)"), ("1X", b"s"), ("bin", &[0xff, 0xfe])]),
    );
    s.insert(ObjectKind::Secret, "nulsec", data(&[("v", b"a\0b")]));
    s.insert(ObjectKind::Secret, "gone", None);
    s
}

fn ctx() -> DownwardContext {
    DownwardContext {
        node_name: "mac-1".into(),
        host_ip: "10.0.0.2".into(),
        pod_ip: None,
        node_cpu_millis: 4000,
        node_memory_bytes: 8 << 30,
        node_ephemeral_bytes: 50 << 30,
    }
}

fn resolve(env: Vec<EnvVar>, env_from: Vec<EnvFromSource>) -> Result<ResolvedEnv, ConfigError> {
    let p = pod(env, env_from);
    resolve_env(&p, container(&p), &sources(), &ctx())
}

fn pairs(env: &ResolvedEnv) -> Vec<(&str, &[u8])> {
    env.vars
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect()
}

#[test]
fn references_name_each_object_once_and_optional_only_if_every_use_is() {
    let p = pod(
        vec![
            cm_key("X", "cfg", "A", Some(true)),
            secret_key("Y", "sec", "token", Some(true)),
            secret_key("Z", "other", "k", Some(true)),
            val("V", "v"),
            field("F", "metadata.name"),
        ],
        vec![
            from_cm("cfg", None, None),
            from_secret("sec", Some("S_"), Some(true)),
        ],
    );
    assert_eq!(
        references(container(&p)),
        vec![
            (ObjectKind::ConfigMap, "cfg".to_owned(), false),
            (ObjectKind::Secret, "sec".to_owned(), true),
            (ObjectKind::Secret, "other".to_owned(), true),
        ]
    );
    assert!(references(&Container::default()).is_empty());
}

#[test]
fn env_from_applies_prefixes_and_skips_invalid_names() {
    let env = resolve(
        vec![],
        vec![
            from_cm("cfg", None, None),
            from_secret("sec", Some("S_"), None),
            from_cm("cfg", Some("9"), None),
        ],
    )
    .unwrap();
    let names: Vec<&str> = env.vars.iter().map(|(k, _)| k.as_str()).collect();
    // With the prefix `S_`, the secret's `1X` becomes valid; `9` makes every key invalid.
    assert_eq!(names, ["A", "B", "S_1X", "S_bin", "S_token"]);
    assert_eq!(
        env.invalid_keys,
        vec![
            InvalidKeys {
                kind: ObjectKind::ConfigMap,
                namespace: "ci".into(),
                name: "cfg".into(),
                keys: vec!["..dots".into(), "1BAD".into()],
            },
            InvalidKeys {
                kind: ObjectKind::ConfigMap,
                namespace: "ci".into(),
                name: "cfg".into(),
                keys: vec!["9..dots".into(), "91BAD".into(), "9A".into(), "9B".into()],
            },
        ]
    );
}

#[test]
fn env_var_names_follow_kubelet_1_28() {
    for ok in [
        "A",
        "a_b",
        "_x",
        "-x",
        ".x",
        "my.env-name",
        "X1",
        ".a.",
        "a..b",
    ] {
        assert!(is_env_var_name(ok), "{ok:?}");
    }
    for bad in ["", "1A", ".", "..", "..a", "a b", "a=b", "é", "a\n", "$A"] {
        assert!(!is_env_var_name(bad), "{bad:?}");
    }
}

#[test]
fn missing_objects_fail_unless_optional() {
    let missing = |kind, name: &str| {
        Err(ConfigError::MissingObject {
            kind,
            name: name.into(),
        })
    };
    type Case<'a> = (
        Vec<EnvVar>,
        Vec<EnvFromSource>,
        Result<Vec<(&'a str, &'a [u8])>, ConfigError>,
    );
    let cases: Vec<Case<'_>> = vec![
        (
            vec![],
            vec![from_secret("gone", None, None)],
            missing(ObjectKind::Secret, "gone"),
        ),
        (
            vec![],
            vec![from_cm("unfetched", None, Some(false))],
            missing(ObjectKind::ConfigMap, "unfetched"),
        ),
        (
            vec![],
            vec![from_secret("gone", None, Some(true))],
            Ok(vec![]),
        ),
        (
            vec![secret_key("K", "gone", "k", None)],
            vec![],
            missing(ObjectKind::Secret, "gone"),
        ),
        (
            vec![cm_key("K", "nope", "k", None)],
            vec![],
            missing(ObjectKind::ConfigMap, "nope"),
        ),
        (
            vec![cm_key("K", "nope", "k", Some(true))],
            vec![],
            Ok(vec![]),
        ),
        (
            vec![cm_key("K", "cfg", "nokey", None)],
            vec![],
            Err(ConfigError::MissingKey {
                kind: ObjectKind::ConfigMap,
                namespace: "ci".into(),
                name: "cfg".into(),
                key: "nokey".into(),
            }),
        ),
        (
            vec![secret_key("K", "sec", "nokey", Some(false))],
            vec![],
            Err(ConfigError::MissingKey {
                kind: ObjectKind::Secret,
                namespace: "ci".into(),
                name: "sec".into(),
                key: "nokey".into(),
            }),
        ),
        // An optional miss skips the variable: its earlier definition stays.
        (
            vec![
                val("K", "kept"),
                secret_key("K", "sec", "nokey", Some(true)),
            ],
            vec![],
            Ok(vec![("K", &b"kept"[..])]),
        ),
    ];
    for (env, env_from, want) in cases {
        let got = resolve(env.clone(), env_from);
        let got = got.as_ref().map(pairs).map_err(Clone::clone);
        assert_eq!(got, want, "{env:?}");
    }
}

#[test]
fn messages_are_kubelets_words_without_values() {
    let err = resolve(vec![secret_key("K", "sec", "nokey", None)], vec![]).unwrap_err();
    assert_eq!(err.to_string(), "couldn't find key nokey in Secret ci/sec");
    let err = resolve(vec![], vec![from_cm("nope", None, None)]).unwrap_err();
    assert_eq!(err.to_string(), "configmap \"nope\" not found");
    let err = resolve(vec![secret_key("BIN", "nulsec", "v", None)], vec![]).unwrap_err();
    assert_eq!(err, ConfigError::NulInEnv { name: "BIN".into() });
    assert_eq!(
        err.to_string(),
        "environment variable BIN contains a NUL byte; mount the value as a file instead"
    );
}

#[test]
fn later_definitions_override_at_the_first_position_and_expand_against_earlier_ones() {
    let env = resolve(
        vec![
            val("X", "$(C)"), // C is defined later: left as written
            val("B", "x"),
            val("C", "$(A)$(B)-$$(A)-$(NOPE)"),
            val("A", "late"),
            secret_key("TOKEN", "sec", "token", None), // valueFrom is not expanded
            val("EMPTY", ""),
            EnvVar {
                name: "BOTH".into(),
                value: Some(String::new()),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        api_version: Some("v1".into()),
                        field_path: "metadata.namespace".into(),
                    }),
                    ..Default::default()
                }),
            },
        ],
        vec![from_cm("cfg", None, None)],
    )
    .unwrap();
    assert_eq!(
        pairs(&env),
        vec![
            ("A", &b"late"[..]),
            ("B", b"x"),
            ("X", b"$(C)"),
            ("C", b"1x-$(A)-$(NOPE)"),
            ("TOKEN", b"$(A)"),
            ("EMPTY", b""),
            ("BOTH", b"ci"),
        ]
    );
}

#[test]
fn downward_references_resolve_through_the_downward_module() {
    let env = resolve(
        vec![
            field("NAME", "metadata.name"),
            field("NODE", "spec.nodeName"),
            field("IP", "status.podIP"),
            res("MEM", "limits.memory", Some("1Mi"), None),
            res("MEM_BY_NAME", "limits.memory", Some("1Gi"), Some("vm")),
            res("CPU", "limits.cpu", Some("1m"), Some("")),
            res("REQ", "requests.cpu", None, None),
        ],
        vec![],
    )
    .unwrap();
    assert_eq!(
        pairs(&env),
        vec![
            ("NAME", &b"runner"[..]),
            ("NODE", b"mac-1"),
            ("IP", b""),
            ("MEM", b"2048"),
            ("MEM_BY_NAME", b"2"),
            ("CPU", b"4000"),
            ("REQ", b"0"),
        ]
    );
    let unknown = resolve(vec![res("R", "limits.cpu", None, Some("other"))], vec![]);
    assert_eq!(
        unknown.unwrap_err(),
        ConfigError::InvalidReference("container other not found".into())
    );
    let bad = resolve(vec![field("F", "status.phase")], vec![]);
    assert!(matches!(bad, Err(ConfigError::InvalidReference(_))));
    let file = from(
        "F",
        EnvVarSource {
            file_key_ref: Some(FileKeySelector::default()),
            ..Default::default()
        },
    );
    assert!(matches!(
        resolve(vec![file], vec![]),
        Err(ConfigError::InvalidReference(_))
    ));
}

#[test]
fn byte_values_round_trip_and_nul_fails_only_in_final_values() {
    let big = vec![b'x'; 1 << 20];
    let special = b"line1\nline2 \"quoted\" 'single' $HOME $(A) \\ \t end".to_vec();
    let bin = vec![0xffu8, 0xfe, b'a'];
    let mut s = sources();
    s.insert(
        ObjectKind::Secret,
        "raw",
        data(&[
            ("big", &big),
            ("special", &special),
            ("bin", &bin),
            ("nul", b"a\0b"),
        ]),
    );
    let p = pod(
        vec![
            secret_key("BIG", "raw", "big", None),
            secret_key("SPECIAL", "raw", "special", None),
            secret_key("BIN", "raw", "bin", None),
            val("WRAPPED", "<$(BIN)>"),
            secret_key("NUL", "raw", "nul", None),
            val("NUL", "replaced"),
        ],
        vec![],
    );
    let env = resolve_env(&p, container(&p), &s, &ctx()).unwrap();
    let got = pairs(&env);
    assert_eq!(got[0], ("BIG", big.as_slice()));
    assert_eq!(got[1], ("SPECIAL", special.as_slice()));
    assert_eq!(got[2], ("BIN", bin.as_slice()));
    assert_eq!(got[3], ("WRAPPED", &[b'<', 0xff, 0xfe, b'a', b'>'][..]));
    assert_eq!(got[4], ("NUL", &b"replaced"[..]));

    // A NUL carried into a final value through `$(VAR)` fails too.
    let p = pod(
        vec![
            secret_key("N", "raw", "nul", None),
            val("N2", "$(N)"),
            val("N", "ok"),
        ],
        vec![],
    );
    assert_eq!(
        resolve_env(&p, container(&p), &s, &ctx()),
        Err(ConfigError::NulInEnv { name: "N2".into() })
    );
}

#[test]
fn args_expand_against_the_resolved_env() {
    let env = ResolvedEnv {
        vars: vec![
            ("A".into(), b"1".to_vec()),
            ("BIN".into(), vec![b'x', 0xff]),
        ],
        invalid_keys: vec![],
    };
    let args: Vec<String> = ["$(A)", "-n=$(A)$(A)", "$(MISSING)", "$$(A)", "$(BIN)"]
        .map(Into::into)
        .into();
    assert_eq!(
        expand_args(&args, &env),
        ["1", "-n=11", "$(MISSING)", "$(A)", "x\u{fffd}"]
    );
    assert!(expand_args(&[], &env).is_empty());
}
