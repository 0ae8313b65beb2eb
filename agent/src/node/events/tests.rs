use super::*;

fn c(type_: &str, status: &str) -> NodeCondition {
    NodeCondition {
        type_: type_.into(),
        status: status.into(),
        message: Some("m".into()),
        ..NodeCondition::default()
    }
}

#[test]
fn only_changed_conditions_produce_events_with_kubelet_reasons() {
    let prev = [c("MemoryPressure", "False"), c("Ready", "Unknown")];
    let cur = [
        c("MemoryPressure", "False"),
        c("DiskPressure", "True"),
        c("Ready", "True"),
    ];
    let ev = transition_events("mini-1", &prev, &cur);
    let reasons: Vec<_> = ev.iter().map(|e| e.reason).collect();
    assert_eq!(reasons, ["NodeHasDiskPressure", "NodeReady"]);
    assert_eq!(ev[1].message, "Node mini-1 status is now: NodeReady");
    assert!(transition_events("mini-1", &cur, &cur).is_empty());
}

#[test]
fn event_names_are_valid_for_the_longest_node_name() {
    let node = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    assert_eq!(node.len(), 253);
    let ev = NodeEvent {
        warning: false,
        reason: "Starting",
        message: "m".into(),
    };
    let now = Timestamp::from_second(1_700_000_000).unwrap();
    let suffix = format!(".{:x}", now.as_nanosecond());
    let e = event_object(&node, &ev, now);
    let name = e.metadata.name.unwrap();
    assert!(name.len() <= 253, "{} chars", name.len());
    assert!(name.ends_with(&suffix), "{name}");
    assert_eq!(e.involved_object.name.as_deref(), Some(node.as_str()));
    let short = event_object("mini-1", &ev, now).metadata.name.unwrap();
    assert_eq!(short, format!("mini-1{suffix}"));
}

#[test]
fn tart_not_ready_is_a_warning_with_the_reason() {
    let ev = transition_events("n", &[c("TartReady", "True")], &[c("TartReady", "False")]);
    assert_eq!(ev.len(), 1);
    assert!(ev[0].warning);
    assert_eq!(ev[0].message, "Node n status is now: TartNotReady: m");
}

#[test]
fn a_cordon_and_an_uncordon_are_kubelets_events_once_each() {
    let mut last = false;
    assert_eq!(schedulable_event("mini-1", &mut last, false), None);
    let cordon = schedulable_event("mini-1", &mut last, true).expect("cordoned");
    assert_eq!(
        (cordon.reason, cordon.warning, cordon.message.as_str()),
        (
            "NodeNotSchedulable",
            false,
            "Node mini-1 status is now: NodeNotSchedulable"
        )
    );
    assert_eq!(schedulable_event("mini-1", &mut last, true), None, "once");
    let uncordon = schedulable_event("mini-1", &mut last, false).expect("uncordoned");
    assert_eq!(uncordon.reason, "NodeSchedulable");
    assert_eq!(
        uncordon.message,
        "Node mini-1 status is now: NodeSchedulable"
    );
    assert_eq!(schedulable_event("mini-1", &mut last, false), None);
}
