use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, EnvVar, EnvVarSource, ObjectFieldSelector, Pod},
    apimachinery::pkg::api::resource::Quantity,
};

use super::*;
use crate::pods::fixtures::{UID, test_pod};

fn ctx() -> DownwardContext {
    DownwardContext {
        node_name: "ctx-node".into(),
        host_ip: "192.168.1.10".into(),
        pod_ip: Some("192.168.64.5".into()),
        node_cpu_millis: 8000,
        node_memory_bytes: 16 << 30,
        node_ephemeral_bytes: 100 << 30,
    }
}

fn pod() -> Pod {
    let mut pod = test_pod().build();
    pod.metadata.labels = Some(BTreeMap::from([
        ("app".into(), "web".into()),
        ("example.com/tier".into(), "front".into()),
    ]));
    pod.metadata.annotations = Some(BTreeMap::from([
        ("note".into(), "a \"quoted\"\nline\t$(X) \\".into()),
        ("Example.com/Mixed".into(), "m".into()),
    ]));
    pod.spec.as_mut().unwrap().service_account_name = Some("builder".into());
    pod
}

#[test]
fn every_field_path_reads_its_value() {
    let cases = [
        ("metadata.name", "runner"),
        ("metadata.namespace", "ci"),
        ("metadata.uid", UID),
        ("metadata.labels['app']", "web"),
        ("metadata.labels['example.com/tier']", "front"),
        ("metadata.labels['absent']", ""),
        (
            "metadata.annotations['note']",
            "a \"quoted\"\nline\t$(X) \\",
        ),
        ("metadata.annotations['Example.com/Mixed']", "m"),
        ("metadata.labels", "app=\"web\"\nexample.com/tier=\"front\""),
        ("spec.nodeName", "mac-1"),
        ("spec.host", "mac-1"),
        ("spec.serviceAccountName", "builder"),
        ("status.hostIP", "192.168.1.10"),
        ("status.hostIPs", "192.168.1.10"),
        ("status.podIP", "192.168.64.5"),
        ("status.podIPs", "192.168.64.5"),
    ];
    for (path, want) in cases {
        assert_eq!(
            field_value(&pod(), &ctx(), path).as_deref(),
            Ok(want),
            "{path}"
        );
    }
}

#[test]
fn annotations_map_is_sorted_and_go_quoted() {
    let got = field_value(&pod(), &ctx(), "metadata.annotations").unwrap();
    assert_eq!(
        got,
        "Example.com/Mixed=\"m\"\nnote=\"a \\\"quoted\\\"\\nline\\t$(X) \\\\\""
    );
}

#[test]
fn go_quote_escapes_like_strconv_quote() {
    let cases = [
        ("", r#""""#),
        ("plain text", r#""plain text""#),
        ("\u{7}\u{8}\u{c}\u{b}\r", r#""\a\b\f\v\r""#),
        ("\u{1}\u{1f}\u{7f}", r#""\x01\x1f\x7f""#),
        ("é ü 日本 😀 e\u{301}", "\"é ü 日本 😀 e\u{301}\""),
        (
            "\u{85}\u{a0}\u{ad}\u{200b}\u{2028}\u{feff}",
            r#""\u0085\u00a0\u00ad\u200b\u2028\ufeff""#,
        ),
        ("\u{e000}\u{10fffd}", r#""\ue000\U0010fffd""#),
    ];
    for (input, want) in cases {
        assert_eq!(go_quote(input), want, "{input:?}");
    }
}

#[test]
fn node_name_falls_back_to_the_agents_when_the_pod_has_none() {
    let mut p = pod();
    p.spec.as_mut().unwrap().node_name = None;
    assert_eq!(
        field_value(&p, &ctx(), "spec.nodeName").unwrap(),
        "ctx-node"
    );
}

#[test]
fn pod_ip_before_boot_is_empty() {
    let c = DownwardContext {
        pod_ip: None,
        ..ctx()
    };
    assert_eq!(field_value(&pod(), &c, "status.podIP").unwrap(), "");
    assert_eq!(field_value(&pod(), &c, "status.podIPs").unwrap(), "");
}

#[test]
fn unsupported_paths_and_bad_subscripts_are_invalid_references() {
    let cases = [
        (
            "spec.containers",
            "field label not supported: spec.containers",
        ),
        ("status.phase", "unsupported fieldPath: status.phase"),
        (
            "spec.restartPolicy",
            "unsupported fieldPath: spec.restartPolicy",
        ),
        (
            "metadata.name['x']",
            "field label does not support subscript: metadata.name['x']",
        ),
        (
            "metadata.labels['bad key']",
            "invalid key subscript in metadata.labels['bad key']",
        ),
        (
            "metadata.labels['Upper.Case/x']",
            "invalid key subscript in metadata.labels['Upper.Case/x']",
        ),
        (
            "metadata.annotations['a/b/c']",
            "invalid key subscript in metadata.annotations['a/b/c']",
        ),
        (
            "metadata.labels['']",
            "invalid key subscript in metadata.labels['']",
        ),
        ("['x']", "field label not supported: ['x']"),
    ];
    for (path, want) in cases {
        assert_eq!(
            field_value(&pod(), &ctx(), path),
            Err(ConfigError::InvalidReference(want.into())),
            "{path}"
        );
    }
}

#[test]
fn field_ref_accepts_only_api_version_v1() {
    let sel = |v: Option<&str>| ObjectFieldSelector {
        api_version: v.map(Into::into),
        field_path: "metadata.name".into(),
    };
    for ok in [None, Some(""), Some("v1")] {
        assert_eq!(field_ref_value(&pod(), &ctx(), &sel(ok)).unwrap(), "runner");
    }
    assert_eq!(
        field_ref_value(&pod(), &ctx(), &sel(Some("v2"))),
        Err(ConfigError::InvalidReference(
            "unsupported pod version: v2".into()
        ))
    );
}

#[test]
fn needs_pod_ip_sees_only_pod_ip_field_refs() {
    let with = |path: &str| Container {
        env: Some(vec![
            EnvVar {
                name: "PLAIN".into(),
                value: Some("status.podIP".into()),
                ..Default::default()
            },
            EnvVar {
                name: "REF".into(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        api_version: None,
                        field_path: path.into(),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    assert!(needs_pod_ip(&with("status.podIP")));
    assert!(needs_pod_ip(&with("status.podIPs")));
    assert!(!needs_pod_ip(&with("status.hostIP")));
    assert!(!needs_pod_ip(&Container::default()));
}

fn container(limits: &[(&str, &str)], requests: &[(&str, &str)]) -> Container {
    let mut b = test_pod();
    for (k, v) in limits {
        b = b.limit(k, v);
    }
    for (k, v) in requests {
        b = b.request(k, v);
    }
    b.build().spec.unwrap().containers.remove(0)
}

#[test]
fn resource_values_divide_and_round_up_like_kubelet() {
    // (limits, requests, resource, divisor, want)
    type Case<'a> = (
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        &'a str,
        Option<&'a str>,
        &'a str,
    );
    let cases: &[Case<'_>] = &[
        (&[("cpu", "1500m")], &[], "limits.cpu", None, "2"),
        (&[("cpu", "1500m")], &[], "limits.cpu", Some("1m"), "1500"),
        (&[("cpu", "1m")], &[], "limits.cpu", Some("1"), "1"),
        (&[], &[("cpu", "250m")], "requests.cpu", Some("1"), "1"),
        (&[], &[("cpu", "250m")], "requests.cpu", Some("1m"), "250"),
        (&[("cpu", "2")], &[], "requests.cpu", None, "2"),
        (&[], &[], "requests.cpu", Some("1m"), "0"),
        (&[], &[], "limits.cpu", None, "8"),
        (&[], &[], "limits.cpu", Some("1m"), "8000"),
        (&[("cpu", "0")], &[], "limits.cpu", None, "8"),
        (&[("cpu", "1")], &[("cpu", "0")], "requests.cpu", None, "0"),
        (
            &[("memory", "1Gi")],
            &[],
            "limits.memory",
            Some("1Mi"),
            "1024",
        ),
        (&[("memory", "1Gi")], &[], "limits.memory", Some("1Gi"), "1"),
        (
            &[("memory", "1000Mi")],
            &[],
            "limits.memory",
            Some("1Gi"),
            "1",
        ),
        (
            &[("memory", "1500M")],
            &[],
            "limits.memory",
            Some("1G"),
            "2",
        ),
        (
            &[("memory", "128974848")],
            &[],
            "limits.memory",
            None,
            "128974848",
        ),
        (&[], &[], "limits.memory", Some("1Mi"), "16384"),
        (
            &[],
            &[("memory", "512Mi")],
            "requests.memory",
            Some("1Mi"),
            "512",
        ),
        (
            &[("memory", "2Gi")],
            &[],
            "requests.memory",
            Some("1Gi"),
            "2",
        ),
        (
            &[("memory", "1Gi")],
            &[],
            "limits.memory",
            Some("0"),
            "1073741824",
        ),
        (
            &[],
            &[("ephemeral-storage", "1Gi")],
            "requests.ephemeral-storage",
            Some("1Mi"),
            "1024",
        ),
        (&[], &[], "limits.ephemeral-storage", Some("1Gi"), "100"),
        (&[], &[], "requests.ephemeral-storage", None, "0"),
    ];
    for (limits, requests, resource, divisor, want) in cases {
        let c = container(limits, requests);
        let d = divisor.map(|d| Quantity(d.into()));
        assert_eq!(
            resource_value(&c, &ctx(), resource, d.as_ref()).as_deref(),
            Ok(*want),
            "{resource} limits={limits:?} requests={requests:?} divisor={divisor:?}"
        );
    }
}

#[test]
fn unknown_resources_and_bad_divisors_are_invalid_references() {
    let c = container(&[("cpu", "1")], &[]);
    for resource in ["limits.gpu", "limits.hugepages-2Mi", "cpu", "spec.cpu", ""] {
        assert_eq!(
            resource_value(&c, &ctx(), resource, None),
            Err(ConfigError::InvalidReference(format!(
                "unsupported container resource : {resource}"
            ))),
        );
    }
    assert_eq!(
        resource_value(&c, &ctx(), "limits.cpu", Some(&Quantity("abc".into()))),
        Err(ConfigError::InvalidReference(
            "invalid divisor for limits.cpu".into()
        ))
    );
    let bad = container(&[("memory", "lots")], &[]);
    assert_eq!(
        resource_value(&bad, &ctx(), "limits.memory", None),
        Err(ConfigError::InvalidReference(
            "invalid quantity for limits.memory".into()
        ))
    );
}
