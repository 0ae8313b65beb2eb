use kube::runtime::{reflector::store::Writer, watcher::Event};

use super::*;
use crate::pods::fixtures::test_pod;

#[test]
fn a_pod_is_found_by_namespace_and_name_and_shared_with_the_store() {
    let served = ServedPods::default();
    assert!(served.pods().is_empty(), "no store yet");
    assert!(served.pod("ci", "runner").is_none());
    let mut writer = Writer::<Pod>::default();
    writer.apply_watcher_event(&Event::Apply(test_pod().build()));
    served.set(writer.as_reader());
    let pod = served.pod("ci", "runner").expect("in the store");
    assert_eq!(pod.metadata.name.as_deref(), Some("runner"));
    assert!(served.pod("ci", "other").is_none());
    assert!(served.pod("other", "runner").is_none());
    let again = served.pods();
    assert_eq!(again.len(), 1);
    assert!(Arc::ptr_eq(&pod, &again[0]), "the store's Pod, not a copy");
}
