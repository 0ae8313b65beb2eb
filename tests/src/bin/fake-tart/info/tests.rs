use super::*;

#[test]
fn versions_compare_numerically_and_snapshot_is_newest() {
    assert!(version_tuple("2.10.0") < version_tuple("2.11.0"));
    assert!(version_tuple("2.9") < version_tuple("2.31.0"));
    assert!(version_tuple("SNAPSHOT") > version_tuple("2.35.0"));
}

#[test]
fn tables_pad_columns_with_one_space() {
    let rows = vec![
        vec!["a".to_string(), "bb".into()],
        vec!["ccc".into(), "d".into()],
    ];
    assert_eq!(table(&rows), "a   bb\nccc d");
}
