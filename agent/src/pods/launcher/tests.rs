use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::*;

fn pod(annotation: Option<&str>, container: serde_json::Value) -> Pod {
    let mut p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [container]},
    }))
    .unwrap();
    if let Some(a) = annotation {
        p.metadata.annotations = Some(BTreeMap::from([(ANNOTATION.to_owned(), a.to_owned())]));
    }
    p
}

#[test]
fn the_pods_annotation_overrides_the_nodes_mode() {
    let c = json!({"name": "c", "image": "x/y:z"});
    let cases = [
        (None, LauncherMode::Baked, LauncherMode::Baked),
        (Some("auto"), LauncherMode::Baked, LauncherMode::Auto),
        (Some("baked"), LauncherMode::Auto, LauncherMode::Baked),
        (Some("deliver"), LauncherMode::Auto, LauncherMode::Deliver),
    ];
    for (a, node, want) in cases {
        assert_eq!(mode_of(&pod(a, c.clone()), node), Ok(want), "{a:?}");
    }
}

#[test]
fn an_annotation_naming_no_mode_is_a_clear_error() {
    let c = json!({"name": "c", "image": "x/y:z"});
    for bad in ["", "Auto", "delivered", "auto "] {
        let e = mode_of(&pod(Some(bad), c.clone()), LauncherMode::Auto).unwrap_err();
        assert_eq!(
            e,
            format!(
                "annotation tart.run/guest-launcher: {bad:?} is not a launcher mode (one of auto, baked, deliver)"
            )
        );
    }
}

#[test]
fn a_container_runs_a_command_when_it_has_a_command_or_args() {
    let cases = [
        (json!({"name": "c"}), false),
        (json!({"name": "c", "command": [], "args": []}), false),
        (json!({"name": "c", "command": ["true"]}), true),
        (json!({"name": "c", "args": ["--serve"]}), true),
    ];
    for (c, want) in cases {
        assert_eq!(runs_command(&pod(None, c.clone())), want, "{c}");
    }
}

#[test]
fn the_plan_follows_the_mode_for_a_command_and_is_nothing_without_one() {
    use LauncherMode::*;
    let cases = [
        (Auto, true, LauncherPlan::Deliver(Install::IfMissing)),
        (Baked, true, LauncherPlan::WaitForImage),
        (Deliver, true, LauncherPlan::Deliver(Install::Always)),
        (Auto, false, LauncherPlan::None),
        (Baked, false, LauncherPlan::None),
        (Deliver, false, LauncherPlan::None),
    ];
    for (mode, cmd, want) in cases {
        assert_eq!(plan(mode, cmd), want, "{mode:?} {cmd}");
    }
}

#[test]
fn a_reported_launcher_is_the_delivered_one_only_when_it_was_installed() {
    assert_eq!(
        LauncherOutcome::reported(Some(Delivered::Installed)),
        LauncherOutcome::Delivered
    );
    assert_eq!(
        LauncherOutcome::reported(Some(Delivered::ImageHasOne)),
        LauncherOutcome::Image
    );
    assert_eq!(LauncherOutcome::reported(None), LauncherOutcome::Image);
}

#[test]
fn the_missing_message_says_what_is_missing() {
    let d = Duration::from_secs(120);
    let auto = LauncherPlan::Deliver(Install::IfMissing);
    assert_eq!(
        missing_message(auto, false, d),
        "the image has neither the tart-kubelet launcher nor the Tart Guest Agent: nothing reported within 120s; see docs/guest.md"
    );
    assert!(missing_message(auto, true, d).starts_with("the guest launcher did not report"));
    assert!(missing_message(LauncherPlan::WaitForImage, false, d).contains("launcher mode baked"));
}

#[test]
fn the_failed_install_message_names_the_code_and_the_likely_cause() {
    let m = failed_message(1);
    assert!(m.contains("failed with exit code 1"), "{m}");
    assert!(m.contains("passwordless sudo"), "{m}");
    assert!(m.ends_with("see docs/guest.md"), "{m}");
    assert!(failed_message(-9).contains("exit code -9"));
}
