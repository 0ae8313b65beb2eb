//! Tests of [`super::Declaration`].

use std::collections::BTreeMap;

use super::*;

fn data(json: &str) -> BTreeMap<String, String> {
    [(DATA_KEY.to_owned(), json.to_owned())].into()
}

fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn a_declaration_lists_images_for_matching_nodes() {
    let d = Declaration::parse(&data(
        r#"{"images": [
            {"image": "r.example/a:1", "nodeSelector": {"chip": "M2"}},
            {"image": "r.example/b:1"},
            {"image": "r.example/a:1"}
        ], "maxConcurrentPulls": 2}"#,
    ))
    .unwrap();
    let m2: Vec<&str> = d
        .wanted_by(&labels(&[("chip", "M2"), ("x", "y")]))
        .iter()
        .map(|w| w.image.as_str())
        .collect();
    assert_eq!(m2, ["r.example/a:1", "r.example/b:1"], "each image once");
    let m1: Vec<&str> = d
        .wanted_by(&labels(&[("chip", "M1")]))
        .iter()
        .map(|w| w.image.as_str())
        .collect();
    assert_eq!(
        m1,
        ["r.example/b:1", "r.example/a:1"],
        "the unselective entry"
    );
}

#[test]
fn bad_declarations_say_what_is_wrong() {
    let cases: [(&str, BTreeMap<String, String>, &str); 5] = [
        ("no key", BTreeMap::new(), "has no \"prepull.json\" key"),
        (
            "not json",
            data("images: []"),
            "not a valid pre-pull declaration",
        ),
        (
            "unknown field",
            data(r#"{"images": [{"image": "a/b:1", "nodeSelecter": {}}]}"#),
            "unknown field `nodeSelecter`",
        ),
        (
            "zero cap",
            data(r#"{"maxConcurrentPulls": 0}"#),
            "maxConcurrentPulls must be at least 1",
        ),
        (
            "percent over 100",
            data(r#"{"maxConcurrentPercent": 150}"#),
            "between 1 and 100",
        ),
    ];
    for (name, d, want) in cases {
        let e = Declaration::parse(&d).unwrap_err().to_string();
        assert!(e.contains(want), "{name}: {e}");
    }
}

#[test]
fn the_cap_is_the_smaller_of_count_and_percentage_and_at_least_one() {
    let d = |n: Option<u32>, p: Option<u32>| Declaration {
        max_concurrent_pulls: n,
        max_concurrent_percent: p,
        ..Declaration::default()
    };
    assert_eq!(d(None, None).cap(40), None);
    assert_eq!(d(Some(3), None).cap(40), Some(3));
    assert_eq!(d(None, Some(25)).cap(40), Some(10));
    assert_eq!(d(None, Some(25)).cap(5), Some(2), "rounded up");
    assert_eq!(d(Some(3), Some(25)).cap(40), Some(3));
    assert_eq!(d(Some(30), Some(25)).cap(40), Some(10));
    assert_eq!(d(None, Some(10)).cap(0), Some(1), "at least one");
}

#[test]
fn the_shipped_example_is_a_valid_declaration() {
    let yaml = include_str!("../../../../../packaging/kubernetes/prepull.yaml");
    // The JSON block under `prepull.json: |`, unindented.
    let json: String = yaml
        .split_once("prepull.json: |\n")
        .unwrap()
        .1
        .lines()
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let d = Declaration::parse(&data(&json)).unwrap();
    assert_eq!(d.images.len(), 2);
    assert_eq!(d.cap(40), Some(4));
}
