use std::time::Duration;

use k8s_openapi::api::core::v1::Container;
use serde_json::{Value, json};

use super::*;

/// A container named `vm` with ports `web` (8080) and `admin` (9000), plus `extra` fields.
fn container(extra: Value) -> Container {
    let mut c = json!({
        "name": "vm",
        "ports": [
            {"name": "web", "containerPort": 8080},
            {"name": "admin", "containerPort": 9000}
        ]
    });
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(c).unwrap()
}

fn liveness(probe: Value) -> Result<ProbeSet, ProbeSpecError> {
    ProbeSet::from_container(&container(json!({ "livenessProbe": probe })))
}

fn error(probe: &str, body: Value) -> String {
    ProbeSet::from_container(&container(json!({ probe: body })))
        .unwrap_err()
        .to_string()
}

#[test]
fn a_container_without_probes_gives_an_empty_set() {
    let set = ProbeSet::from_container(&container(json!({}))).unwrap();
    assert!(set.is_empty());
    assert_eq!(set.container, "vm");
}

#[test]
fn absent_and_zero_fields_take_the_api_server_defaults() {
    for probe in [
        json!({"exec": {"command": ["true"]}}),
        json!({"exec": {"command": ["true"]}, "periodSeconds": 0, "timeoutSeconds": 0,
               "successThreshold": 0, "failureThreshold": 0, "initialDelaySeconds": 0}),
    ] {
        let set = liveness(probe).unwrap();
        let spec = set.liveness.unwrap();
        assert_eq!(spec.kind, ProbeKind::Liveness);
        assert_eq!(spec.initial_delay, Duration::ZERO);
        assert_eq!(spec.period, Duration::from_secs(10));
        assert_eq!(spec.timeout, Duration::from_secs(1));
        assert_eq!((spec.success_threshold, spec.failure_threshold), (1, 3));
        assert_eq!(spec.termination_grace, None);
    }
}

#[test]
fn given_fields_are_kept() {
    let set = ProbeSet::from_container(&container(json!({
        "readinessProbe": {
            "tcpSocket": {"port": 22}, "initialDelaySeconds": 5, "periodSeconds": 2,
            "timeoutSeconds": 3, "successThreshold": 2, "failureThreshold": 7
        },
        "startupProbe": {"exec": {"command": ["test", "-f", "/ready"]},
                         "terminationGracePeriodSeconds": 15}
    })))
    .unwrap();
    let r = set.readiness.as_ref().unwrap();
    assert_eq!(
        r.action,
        Action::TcpSocket {
            host: None,
            port: 22
        }
    );
    assert_eq!(r.initial_delay, Duration::from_secs(5));
    assert_eq!(r.period, Duration::from_secs(2));
    assert_eq!(r.timeout, Duration::from_secs(3));
    assert_eq!((r.success_threshold, r.failure_threshold), (2, 7));
    let s = set.get(ProbeKind::Startup).unwrap();
    assert_eq!(
        s.action,
        Action::Exec {
            command: vec!["test".into(), "-f".into(), "/ready".into()]
        }
    );
    assert_eq!(s.termination_grace, Some(Duration::from_secs(15)));
    assert!(set.liveness.is_none());
}

#[test]
fn http_get_resolves_named_ports_and_keeps_headers_in_order() {
    let set = liveness(json!({"httpGet": {
        "path": "/healthz?full=1", "port": "web", "scheme": "HTTPS", "host": "guest.local",
        "httpHeaders": [{"name": "Host", "value": "app"}, {"name": "X-A", "value": "1"}]
    }}))
    .unwrap();
    assert_eq!(
        set.liveness.unwrap().action,
        Action::HttpGet(HttpGet {
            scheme: Scheme::Https,
            host: Some("guest.local".into()),
            port: 8080,
            path: "/healthz?full=1".into(),
            headers: vec![("Host".into(), "app".into()), ("X-A".into(), "1".into())],
        })
    );
}

#[test]
fn http_get_defaults_to_plain_http_on_the_pod_ip() {
    let set = liveness(json!({"httpGet": {"port": 80, "host": ""}})).unwrap();
    let Action::HttpGet(h) = set.liveness.unwrap().action else {
        panic!("not httpGet")
    };
    assert_eq!(
        (h.scheme, h.host, h.path.as_str()),
        (Scheme::Http, None, "")
    );
}

#[test]
fn a_number_written_as_a_string_is_a_port_as_kubelet_takes_it() {
    let set = liveness(json!({"tcpSocket": {"port": "2222"}})).unwrap();
    assert_eq!(
        set.liveness.unwrap().action,
        Action::TcpSocket {
            host: None,
            port: 2222
        }
    );
}

#[test]
fn each_unrunnable_spec_names_its_field() {
    let cases = [
        (
            "livenessProbe",
            json!({"httpGet": {"port": "metrics"}}),
            "livenessProbe.httpGet.port: named port \"metrics\" is not a containerPort",
        ),
        (
            "readinessProbe",
            json!({"tcpSocket": {"port": 70000}}),
            "readinessProbe.tcpSocket.port: invalid port number: 70000",
        ),
        (
            "readinessProbe",
            json!({"tcpSocket": {"port": 0}}),
            "readinessProbe.tcpSocket.port: invalid port number: 0",
        ),
        (
            "startupProbe",
            json!({}),
            "startupProbe: must specify exactly one handler (exec, httpGet, tcpSocket or grpc)",
        ),
        (
            "startupProbe",
            json!({"exec": {"command": ["true"]}, "tcpSocket": {"port": 22}}),
            "startupProbe: must specify exactly one handler (exec, httpGet, tcpSocket or grpc)",
        ),
        (
            "livenessProbe",
            json!({"exec": {"command": []}}),
            "livenessProbe.exec.command: Required value",
        ),
        (
            "livenessProbe",
            json!({"grpc": {"port": 9000}}),
            "livenessProbe.grpc: gRPC probes are not supported on this node",
        ),
        (
            "livenessProbe",
            json!({"httpGet": {"port": 80, "scheme": "FTP"}}),
            "livenessProbe.httpGet.scheme: unsupported value \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
        ),
        (
            "livenessProbe",
            json!({"httpGet": {"port": 80, "httpHeaders": [{"name": "bad name", "value": "x"}]}}),
            "livenessProbe.httpGet.httpHeaders[0]: invalid header \"bad name\"",
        ),
        (
            "livenessProbe",
            json!({"exec": {"command": ["true"]}, "periodSeconds": -1}),
            "livenessProbe.periodSeconds: must be greater than or equal to 1 (got -1)",
        ),
        (
            "livenessProbe",
            json!({"exec": {"command": ["true"]}, "initialDelaySeconds": -5}),
            "livenessProbe.initialDelaySeconds: must be greater than or equal to 0 (got -5)",
        ),
        (
            "livenessProbe",
            json!({"exec": {"command": ["true"]}, "successThreshold": 2}),
            "livenessProbe.successThreshold: must be 1 (got 2)",
        ),
        (
            "startupProbe",
            json!({"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 0}),
            "startupProbe.terminationGracePeriodSeconds: must be greater than or equal to 1 (got 0)",
        ),
        (
            "readinessProbe",
            json!({"exec": {"command": ["true"]}, "terminationGracePeriodSeconds": 5}),
            "readinessProbe.terminationGracePeriodSeconds: must not be set for readinessProbes",
        ),
    ];
    for (probe, body, want) in cases {
        assert_eq!(error(probe, body.clone()), want, "{probe}: {body}");
    }
}

#[test]
fn kinds_have_stable_words() {
    let words: Vec<_> = ProbeKind::ALL
        .iter()
        .map(|k| (k.as_str(), k.title(), k.field()))
        .collect();
    assert_eq!(
        words,
        [
            ("startup", "Startup", "startupProbe"),
            ("readiness", "Readiness", "readinessProbe"),
            ("liveness", "Liveness", "livenessProbe"),
        ]
    );
}
