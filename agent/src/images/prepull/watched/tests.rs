use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::super::declaration::DATA_KEY;
use super::*;

fn config_map(name: &str, json: Option<&str>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("tart-kubelet".into()),
            ..ObjectMeta::default()
        },
        data: json.map(|j| [(DATA_KEY.to_owned(), j.to_owned())].into()),
        ..ConfigMap::default()
    }
}

fn watched(store: Store<ConfigMap>) -> Watched {
    Watched {
        store,
        name: "tart-kubelet-prepull".into(),
        namespace: "tart-kubelet".into(),
        changed: watch::channel(()).1,
        task: None,
    }
}

#[test]
fn the_declaration_follows_what_the_watch_shows() {
    let (store, mut writer) = reflector::store();
    let mut w = watched(store);
    // Listed, no ConfigMap: nothing is declared.
    writer.apply_watcher_event(&watcher::Event::Init);
    writer.apply_watcher_event(&watcher::Event::InitDone);
    assert_eq!(w.current(), Ok(Declaration::default()));
    let cm = config_map(
        "tart-kubelet-prepull",
        Some(r#"{"images": [{"image": "r.example/a:1"}]}"#),
    );
    writer.apply_watcher_event(&watcher::Event::Apply(cm.clone()));
    let d = w.current().unwrap();
    assert_eq!(d.images.len(), 1);
    assert_eq!(d.images[0].image, "r.example/a:1");
    // A ConfigMap without the key is refused with the reason; deleted, it declares nothing.
    writer.apply_watcher_event(&watcher::Event::Apply(config_map(
        "tart-kubelet-prepull",
        None,
    )));
    assert_eq!(w.current(), Err(DeclarationError::MissingKey));
    writer.apply_watcher_event(&watcher::Event::Delete(cm));
    assert_eq!(w.current(), Ok(Declaration::default()));
}

#[test]
fn applied_deleted_and_relisted_objects_wake_the_task_and_list_steps_do_not() {
    let cm = config_map("tart-kubelet-prepull", None);
    assert!(wakes(&watcher::Event::Apply(cm.clone())));
    assert!(wakes(&watcher::Event::Delete(cm.clone())));
    assert!(wakes(&watcher::Event::InitDone));
    assert!(!wakes(&watcher::Event::Init));
    assert!(!wakes(&watcher::Event::InitApply(cm)));
}
