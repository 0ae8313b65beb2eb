use std::sync::Arc;

use kube::api::ObjectMeta;

use super::*;

fn present(uid: &str) -> ObservedNode {
    ObservedNode::Present(Arc::new(Node {
        metadata: ObjectMeta {
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }))
}

#[test]
fn a_stale_absent_before_our_node_was_seen_is_not_a_deletion() {
    let mut seen = false;
    assert!(!node_replaced(&mut seen, Some("u1"), &ObservedNode::Absent));
    assert!(!node_replaced(&mut seen, Some("u1"), &present("u1")));
    assert!(seen);
    assert!(node_replaced(&mut seen, Some("u1"), &ObservedNode::Absent));
}

#[test]
fn a_node_with_another_uid_replaces_ours_once_ours_was_seen() {
    let mut seen = false;
    assert!(
        !node_replaced(&mut seen, Some("u1"), &present("u0")),
        "old object, not yet seen ours"
    );
    assert!(!node_replaced(&mut seen, Some("u1"), &present("u1")));
    assert!(node_replaced(&mut seen, Some("u1"), &present("u2")));
    assert!(!node_replaced(
        &mut seen,
        Some("u1"),
        &ObservedNode::Unknown
    ));
}
