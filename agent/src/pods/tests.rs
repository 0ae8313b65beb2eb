use super::*;

fn node(cpu: &str) -> ObservedNode {
    let n: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "mac-1"},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "ephemeral-storage": "100Gi"}}
    }))
    .unwrap();
    ObservedNode::Present(Arc::new(n))
}

#[test]
fn the_node_is_gone_only_after_it_was_seen() {
    let mut seen = false;
    let v = NodeView::default();
    assert_eq!(node_view(&ObservedNode::Unknown, &mut seen, v), None);
    assert_eq!(
        node_view(&ObservedNode::Absent, &mut seen, v),
        None,
        "not yet registered is not gone"
    );
    let present = node_view(&node("4"), &mut seen, v).unwrap();
    assert!(!present.gone);
    assert_eq!(present.limits.unwrap().cpu_millis, 4000);
    let gone = node_view(&ObservedNode::Absent, &mut seen, present).unwrap();
    assert!(gone.gone);
    assert_eq!(
        gone.limits, present.limits,
        "limits kept while the Node is away"
    );
    let back = node_view(&node("2"), &mut seen, gone).unwrap();
    assert_eq!((back.gone, back.limits.unwrap().cpu_millis), (false, 2000));
}
