use super::*;
use crate::sandbox::workload::Ending;

#[test]
fn a_home_holds_an_image_only_once_its_tag_links_to_a_whole_entry() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("cache/OCIs/ghcr.io/org/img");
    let img = "ghcr.io/org/img:v2";
    assert!(!holds(home.path(), img));
    std::fs::create_dir_all(repo.join("sha256:ab")).unwrap();
    std::os::unix::fs::symlink("sha256:ab", repo.join("v2")).unwrap();
    assert!(!holds(home.path(), img), "no config.json yet");
    std::fs::write(repo.join("sha256:ab/config.json"), "{}").unwrap();
    assert!(holds(home.path(), img));
    assert!(!holds(home.path(), "ghcr.io/org/img:v3"));
}

#[test]
fn only_present_unended_pods_take_a_slot() {
    let mut s = PoolState::default();
    for (pod, node) in [("a", "m1"), ("b", "m1"), ("c", "m2"), ("gone", "m2")] {
        s.nodes.insert(pod.into(), node.into());
    }
    for pod in ["a", "b", "c"] {
        s.present.insert(pod.into(), "Running".into());
    }
    s.ended.insert("b".into(), Ending::Succeeded);
    let busy = busy_slots(&s);
    assert_eq!(busy.get("m1"), Some(&1));
    assert_eq!(busy.get("m2"), Some(&1));
}
