use k8s_openapi::{
    api::core::v1::{
        ContainerPort, ExecAction, HTTPGetAction, Lifecycle, SleepAction, TCPSocketAction,
    },
    apimachinery::pkg::util::intstr::IntOrString,
};

use super::*;
use crate::lifecycle::handlers::model::Scheme;

fn container(post_start: LifecycleHandler) -> Container {
    Container {
        name: "vm".into(),
        ports: Some(vec![ContainerPort {
            name: Some("web".into()),
            container_port: 8080,
            ..Default::default()
        }]),
        lifecycle: Some(Lifecycle {
            post_start: Some(post_start),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn each_handler_reads_as_kubelet_runs_it() {
    let exec = LifecycleHandler {
        exec: Some(ExecAction {
            command: Some(vec!["sh".into(), "-c".into(), "exit 1".into()]),
        }),
        ..Default::default()
    };
    let get = LifecycleHandler {
        http_get: Some(HTTPGetAction {
            path: Some("/started".into()),
            port: IntOrString::String("web".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let bad_port = LifecycleHandler {
        http_get: Some(HTTPGetAction {
            port: IntOrString::String("nope".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let sleep = LifecycleHandler {
        sleep: Some(SleepAction { seconds: 5 }),
        ..Default::default()
    };
    let tcp = LifecycleHandler {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::Int(22),
            ..Default::default()
        }),
        ..Default::default()
    };
    let cases = [
        (
            exec,
            HookAction::Exec {
                command: vec!["sh".into(), "-c".into(), "exit 1".into()],
            },
        ),
        (
            get,
            HookAction::HttpGet(HttpGet {
                scheme: Scheme::Http,
                host: None,
                port: 8080,
                path: "/started".into(),
                headers: vec![],
            }),
        ),
        (
            bad_port,
            HookAction::Invalid(
                "lifecycle.postStart.httpGet.port: named port \"nope\" is not a containerPort"
                    .into(),
            ),
        ),
        (sleep, HookAction::Sleep(Duration::from_secs(5))),
        (
            tcp,
            HookAction::Invalid(
                "invalid handler: tcpSocket is not supported as a lifecycle handler".into(),
            ),
        ),
        (
            LifecycleHandler::default(),
            HookAction::Invalid("invalid handler: no handler".into()),
        ),
    ];
    for (h, want) in cases {
        let c = container(h);
        assert_eq!(hook(&c, HookKind::PostStart), Some(want));
        assert_eq!(hook(&c, HookKind::PreStop), None);
    }
}

#[test]
fn failures_read_as_kubelets_handler_runner_words_them() {
    let exec = HookAction::Exec {
        command: vec!["sh".into(), "-c".into(), "exit 1".into()],
    };
    assert_eq!(
        failure_message(
            &exec,
            "vm",
            "p_ns(u)",
            "command 'sh -c exit 1' exited with 1: oops\n",
            "oops\n"
        ),
        "Exec lifecycle hook ([sh -c exit 1]) for Container \"vm\" in Pod \"p_ns(u)\" failed - \
             error: command 'sh -c exit 1' exited with 1: oops\n, message: \"oops\\n\""
    );
    let tcp = HookAction::Invalid("invalid handler: x".into());
    assert_eq!(
        failure_message(&tcp, "vm", "p", "invalid handler: x", ""),
        "Cannot run handler: invalid handler: x"
    );
    assert_eq!(HookKind::PostStart.failed_reason(), "FailedPostStartHook");
    assert_eq!(HookKind::PreStop.failed_note(), "PreStopHook failed");
}
