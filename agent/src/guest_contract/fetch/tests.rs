use std::collections::BTreeMap;

use k8s_openapi::ByteString;

use super::*;

#[test]
fn config_map_text_and_binary_data_merge_as_bytes() {
    let c = ConfigMap {
        data: Some(BTreeMap::from([("a".into(), "x\ny".into())])),
        binary_data: Some(BTreeMap::from([("b".into(), ByteString(vec![0, 255]))])),
        ..ConfigMap::default()
    };
    let d = config_map_data(c);
    assert_eq!(d["a"], b"x\ny");
    assert_eq!(d["b"], vec![0, 255]);
}

#[test]
fn secret_data_keeps_binary_bytes() {
    let s = Secret {
        data: Some(BTreeMap::from([("k".into(), ByteString(vec![0, 1, 2]))])),
        ..Secret::default()
    };
    assert_eq!(secret_data(s)["k"], vec![0, 1, 2]);
    assert!(secret_data(Secret::default()).is_empty());
}
