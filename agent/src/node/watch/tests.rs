use kube::api::ObjectMeta;

use super::*;

fn node(uid: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some("n".into()),
            uid: Some(uid.into()),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}

#[test]
fn a_relist_without_the_node_means_it_is_gone() {
    let mut listing = None;
    assert!(apply_event(watcher::Event::Init, &mut listing).is_none());
    let s = apply_event(watcher::Event::InitDone, &mut listing).unwrap();
    assert!(matches!(s, ObservedNode::Absent));
}

#[test]
fn listed_applied_and_deleted_nodes_are_tracked() {
    let mut listing = None;
    apply_event(watcher::Event::Init, &mut listing);
    apply_event(watcher::Event::InitApply(node("u1")), &mut listing);
    let s = apply_event(watcher::Event::InitDone, &mut listing).unwrap();
    assert_eq!(s.uid(), Some("u1"));
    let s = apply_event(watcher::Event::Apply(node("u2")), &mut listing).unwrap();
    assert_eq!(s.uid(), Some("u2"));
    let s = apply_event(watcher::Event::Delete(node("u2")), &mut listing).unwrap();
    assert!(s.node().is_none());
}
