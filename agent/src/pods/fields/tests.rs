use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, ContainerResizePolicy, EmptyDirVolumeSource, Lifecycle,
    PodSecurityContext, PodSpec, Probe, ProjectedVolumeSource, ResourceRequirements,
    SecurityContext, Volume, VolumeMount, VolumeProjection,
};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde_json::{Value, json};

use super::{table::*, *};
use crate::pods::fixtures::test_pod;

/// Every table with the Kubernetes type it describes and that type's own field list.
fn tables() -> Vec<(&'static str, &'static [Field], &'static [&'static str])> {
    vec![
        ("PodSpec", POD_SPEC, fields_of::<PodSpec>()),
        ("Container", CONTAINER, fields_of::<Container>()),
        ("Probe", PROBE, fields_of::<Probe>()),
        ("Lifecycle", LIFECYCLE, fields_of::<Lifecycle>()),
        (
            "ContainerPort",
            CONTAINER_PORT,
            fields_of::<ContainerPort>(),
        ),
        (
            "ContainerResizePolicy",
            CONTAINER_RESIZE_POLICY,
            fields_of::<ContainerResizePolicy>(),
        ),
        (
            "ResourceRequirements",
            RESOURCE_REQUIREMENTS,
            fields_of::<ResourceRequirements>(),
        ),
        (
            "SecurityContext",
            SECURITY_CONTEXT,
            fields_of::<SecurityContext>(),
        ),
        (
            "PodSecurityContext",
            POD_SECURITY_CONTEXT,
            fields_of::<PodSecurityContext>(),
        ),
        ("VolumeMount", VOLUME_MOUNT, fields_of::<VolumeMount>()),
        ("Volume", VOLUME, fields_of::<Volume>()),
        (
            "EmptyDirVolumeSource",
            EMPTY_DIR_VOLUME_SOURCE,
            fields_of::<EmptyDirVolumeSource>(),
        ),
        (
            "ProjectedVolumeSource",
            PROJECTED_VOLUME_SOURCE,
            fields_of::<ProjectedVolumeSource>(),
        ),
        (
            "VolumeProjection",
            VOLUME_PROJECTION,
            fields_of::<VolumeProjection>(),
        ),
    ]
}

/// The JSON field names a k8s-openapi type declares, read from its `Deserialize` impl.
fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    struct Probe<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("probed"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    assert!(
        !fields.is_empty(),
        "{} is not a struct",
        std::any::type_name::<T>()
    );
    fields
}

fn warned_paths(value: Value, fields: &[Field]) -> Vec<String> {
    let mut out = vec![];
    walk(&value, fields, "x", &mut |finding, path| {
        if finding == Finding::Warned {
            out.push(path);
        }
    });
    out
}

#[test]
fn every_table_lists_exactly_the_fields_of_its_type() {
    for (ty, table, declared) in tables() {
        let mut listed: Vec<_> = table.iter().map(|f| f.name).collect();
        listed.sort_unstable();
        let mut declared = declared.to_vec();
        declared.sort_unstable();
        assert_eq!(listed, declared, "{ty}");
    }
}

#[test]
fn every_warned_field_is_reported_off_its_baseline_and_not_on_it() {
    for (ty, table, _) in tables() {
        for field in table {
            let Treatment::Warned(baseline) = field.treatment else {
                continue;
            };
            let (off, on) = match baseline {
                Baseline::Empty => (
                    json!("set"),
                    vec![
                        json!(null),
                        json!(false),
                        json!(""),
                        json!([]),
                        json!({"a": []}),
                    ],
                ),
                Baseline::One(values) => (
                    json!("something else"),
                    values
                        .iter()
                        .map(|v| json!(v))
                        .chain([json!(null)])
                        .collect(),
                ),
                Baseline::True => (json!(false), vec![json!(null), json!(true)]),
            };
            let name = field.name;
            assert_eq!(
                warned_paths(json!({ name: off }), table),
                [format!("x.{name}")],
                "{ty}.{name}"
            );
            for v in on {
                assert_eq!(
                    warned_paths(json!({ name: v }), table),
                    Vec::<String>::new()
                );
            }
        }
    }
}

#[test]
fn a_plain_pod_warns_nothing() {
    assert_eq!(ignored_fields(&test_pod().build()), Vec::<String>::new());
}

#[test]
fn a_pod_as_the_api_server_defaults_it_warns_nothing() {
    let pod = test_pod()
        .merge_spec(json!({
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": true,
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access-x", "projected": {"defaultMode": 420,
                "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt",
                                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}},
                        {"name": "scratch", "emptyDir": {}}],
        }))
        .merge_container(json!({
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
            "resources": {},
            "securityContext": {},
            "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"},
                             {"resourceName": "memory", "restartPolicy": "NotRequired"}],
            "ports": [{"containerPort": 22, "protocol": "TCP", "name": "ssh"}],
            "volumeMounts": [{"name": "kube-api-access-x", "readOnly": true,
                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
        }))
        .build();
    assert_eq!(ignored_fields(&pod), Vec::<String>::new());
}

#[test]
fn unhonoured_fields_are_reported_by_path() {
    let cases: Vec<(Value, Value, Vec<&str>)> = vec![
        (
            json!({}),
            json!({"livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
                   "readinessProbe": {"tcpSocket": {"port": 22}},
                   "startupProbe": {"httpGet": {"port": 80}, "failureThreshold": 30}}),
            vec![],
        ),
        (
            json!({}),
            json!({"lifecycle": {"preStop": {"exec": {"command": ["true"]}},
                                 "postStart": {"httpGet": {"port": 80}},
                                 "stopSignal": "SIGINT"},
                   "stdin": true, "stdinOnce": true, "tty": true, "restartPolicy": "Always"}),
            vec![
                "spec.containers[0].lifecycle.stopSignal",
                "spec.containers[0].restartPolicy",
                "spec.containers[0].tty",
            ],
        ),
        (
            json!({}),
            json!({"ports": [{"containerPort": 22}, {"containerPort": 80, "hostPort": 8080}]}),
            vec!["spec.containers[0].ports[1].hostPort"],
        ),
        (
            json!({}),
            json!({"securityContext": {"runAsUser": 501, "privileged": true,
                   "capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": false}}),
            vec![
                "spec.containers[0].securityContext.allowPrivilegeEscalation",
                "spec.containers[0].securityContext.capabilities",
                "spec.containers[0].securityContext.privileged",
            ],
        ),
        (
            json!({"securityContext": {"runAsUser": 501, "fsGroup": 20, "sysctls": []}}),
            json!({}),
            vec!["spec.securityContext.fsGroup"],
        ),
        (
            json!({"hostNetwork": true, "hostPID": false, "hostIPC": true,
                   "shareProcessNamespace": true, "hostname": "mac", "subdomain": "s",
                   "setHostnameAsFQDN": true, "hostAliases": [{"ip": "10.0.0.1"}],
                   "dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"]}}),
            json!({}),
            vec![
                "spec.dnsConfig",
                "spec.dnsPolicy",
                "spec.hostAliases",
                "spec.hostIPC",
                "spec.hostNetwork",
                "spec.hostname",
                "spec.setHostnameAsFQDN",
                "spec.shareProcessNamespace",
                "spec.subdomain",
            ],
        ),
        (
            json!({"readinessGates": [{"conditionType": "x"}], "runtimeClassName": "kata",
                   "os": {"name": "linux"}, "dnsPolicy": "Default"}),
            json!({"resizePolicy": [{"resourceName": "memory",
                                     "restartPolicy": "RestartContainer"}],
                   "resources": {"claims": [{"name": "gpu"}], "limits": {"cpu": "4"}}}),
            vec![
                "spec.containers[0].resizePolicy[0].restartPolicy",
                "spec.containers[0].resources.claims",
                "spec.os",
            ],
        ),
        (
            json!({"volumes": [{"name": "a", "emptyDir": {}},
                               {"name": "b", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]}),
            json!({"volumeMounts": [{"name": "b", "mountPath": "/b",
                                     "mountPropagation": "HostToContainer"}],
                   "terminationMessagePath": "/tmp/msg",
                   "terminationMessagePolicy": "FallbackToLogsOnError"}),
            vec![
                "spec.containers[0].volumeMounts[0].mountPropagation",
                "spec.volumes[1].emptyDir.medium",
                "spec.volumes[1].emptyDir.sizeLimit",
            ],
        ),
        (
            // Scheduler fields and honoured fields warn nothing.
            json!({"nodeSelector": {"kubernetes.io/os": "darwin"}, "priority": 1000,
                   "priorityClassName": "high", "activeDeadlineSeconds": 600,
                   "affinity": {}, "schedulingGates": [], "enableServiceLinks": false}),
            json!({"command": ["/bin/sh"], "args": ["-c", "true"], "workingDir": "/tmp",
                   "env": [{"name": "A", "value": "1"}]}),
            vec![],
        ),
    ];
    for (spec, container, want) in cases {
        let pod = test_pod()
            .merge_spec(spec.clone())
            .merge_container(container.clone())
            .build();
        assert_eq!(
            ignored_fields(&pod),
            want,
            "spec {spec}, container {container}"
        );
    }
}

#[test]
fn each_container_is_reported_by_its_own_index_sorted_once() {
    let pod = test_pod()
        .merge_container(json!({"tty": true}))
        .containers(2)
        .merge_spec(json!({"hostNetwork": true}))
        .build();
    assert_eq!(
        ignored_fields(&pod),
        [
            "spec.containers[0].tty",
            "spec.containers[1].tty",
            "spec.hostNetwork"
        ]
    );
}

#[test]
fn unsupported_volumes_are_named_by_type_or_projected_source() {
    let cases = [
        (json!({"hostPath": {"path": "/data"}}), Some("hostPath")),
        (
            json!({"persistentVolumeClaim": {"claimName": "c"}}),
            Some("persistentVolumeClaim"),
        ),
        (json!({"ephemeral": {}}), Some("ephemeral")),
        (json!({"image": {"reference": "x"}}), Some("image")),
        (
            json!({"projected": {"sources": [{"serviceAccountToken": {"path": "t"}},
                                             {"clusterTrustBundle": {"path": "b"}}]}}),
            Some("projected.sources[1].clusterTrustBundle"),
        ),
        (
            json!({"projected": {"sources": [{"podCertificate": {"signerName": "s",
                                              "keyType": "ED25519"}}]}}),
            Some("projected.sources[0].podCertificate"),
        ),
        (json!({}), Some("no volume type")),
        (json!({"configMap": {"name": "c"}}), None),
        (json!({"secret": {"secretName": "s"}}), None),
        (json!({"downwardAPI": {}}), None),
        (json!({"emptyDir": {"medium": "Memory"}}), None),
        (
            json!({"projected": {"sources": [{"secret": {"name": "s"}},
                                             {"configMap": {"name": "c"}},
                                             {"downwardAPI": {}},
                                             {"serviceAccountToken": {"path": "t"}}]}}),
            None,
        ),
    ];
    for (source, want) in cases {
        let mut v = source.clone();
        v["name"] = json!("v");
        let volume: Volume = serde_json::from_value(v).unwrap();
        assert_eq!(unsupported_volume(&volume).as_deref(), want, "{source}");
    }
}

/// The word docs/pods.md uses for a treatment.
fn doc_word(t: Treatment) -> &'static str {
    match t {
        Treatment::Honoured => "honoured",
        Treatment::Rejected => "rejected",
        Treatment::Warned(_) => "warned",
        Treatment::Scheduler => "scheduler's",
        Treatment::NotApplicable => "not applicable",
        Treatment::Partly(_) => "partly",
    }
}

/// The "Every Pod field" section of docs/pods.md: per `### \`Type\`` heading, each row's field
/// names and treatment word.
fn documented() -> BTreeMap<String, BTreeMap<String, String>> {
    let doc = include_str!("../../../../docs/pods.md");
    let start = doc
        .find("\n## Every Pod field: honoured, rejected or warned")
        .expect("docs/pods.md has the fields section");
    let section = &doc[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let mut tables: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut current = None;
    for line in section.lines() {
        if let Some(h) = line.strip_prefix("### `") {
            current = Some(h.split('`').next().unwrap().to_owned());
        } else if line.starts_with("| `") {
            let cells: Vec<_> = line.split('|').map(str::trim).collect();
            let ty = current.clone().expect("a table row under a type heading");
            for name in cells[1].split(", ") {
                let name = name.trim_matches('`').to_owned();
                let previous = tables
                    .entry(ty.clone())
                    .or_default()
                    .insert(name.clone(), cells[2].to_owned());
                assert!(previous.is_none(), "{ty}.{name} documented twice");
            }
        }
    }
    tables
}

#[test]
fn docs_pods_md_shows_each_table_as_the_code_has_it() {
    let doc = documented();
    let code: BTreeMap<String, BTreeMap<String, String>> = tables()
        .into_iter()
        .map(|(ty, table, _)| {
            let rows = table
                .iter()
                .map(|f| (f.name.to_owned(), doc_word(f.treatment).to_owned()))
                .collect();
            (ty.to_owned(), rows)
        })
        .collect();
    assert_eq!(doc, code);
}
