use super::*;
use crate::pods::fixtures::test_pod;

fn store(root: &std::path::Path) -> PodLogStore {
    let pods: Arc<dyn PodSource> = Arc::new(|| vec![Arc::new(test_pod().build())]);
    let watch = crate::container_logs::LogWatch::polling(Default::default());
    PodLogStore::new(root.to_path_buf(), pods, watch)
}

fn target(pod: &str, container: &str) -> LogTarget {
    LogTarget {
        namespace: test_pod().build().namespace().unwrap(),
        pod: pod.into(),
        container: container.into(),
    }
}

#[tokio::test]
async fn unknown_pods_and_containers_are_404_and_a_pod_without_logs_is_400() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path());
    let q = LogQuery::default();
    let name = test_pod().build().name_any();
    let e = s.open(&target("other", "vm"), &q).await.err().unwrap();
    assert_eq!(e.status(), 404);
    let e = s.open(&target(&name, "sidecar"), &q).await.err().unwrap();
    assert_eq!(e.status(), 404);
    let e = s.open(&target(&name, "vm"), &q).await.err().unwrap();
    assert_eq!(e.status(), 400);
    assert!(e.to_string().contains("waiting to start"), "{e}");
}
