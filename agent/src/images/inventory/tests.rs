use super::*;

fn held(name: &str, tags: &[&str], bytes: u64) -> Held {
    Held {
        digest_name: format!("r.example/{name}@sha256:{}", "0".repeat(64)),
        tag_names: tags
            .iter()
            .map(|t| format!("r.example/{name}:{t}"))
            .collect(),
        bytes,
    }
}

#[test]
fn biggest_first_with_digest_then_tag_names() {
    let got = node_images(&[held("small", &["a"], 10), held("big", &["b", "c"], 30)]);
    let names: Vec<_> = got.iter().map(|i| i.names.clone().unwrap()).collect();
    assert_eq!(
        names[0][0],
        format!("r.example/big@sha256:{}", "0".repeat(64))
    );
    assert_eq!(&names[0][1..], ["r.example/big:b", "r.example/big:c"]);
    assert_eq!(got[0].size_bytes, Some(30));
    assert_eq!(names[1][1], "r.example/small:a");
}

#[test]
fn at_most_fifty_images_and_five_names_each() {
    let tags: Vec<String> = (0..9).map(|i| format!("t{i}")).collect();
    let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
    let many: Vec<Held> = (0..60u64)
        .map(|i| held(&format!("img{i}"), &tags, i))
        .collect();
    let got = node_images(&many);
    assert_eq!(got.len(), MAX_IMAGES);
    assert_eq!(got[0].size_bytes, Some(59), "the biggest are kept");
    assert_eq!(got[49].size_bytes, Some(10));
    assert!(
        got.iter()
            .all(|i| i.names.as_ref().unwrap().len() == MAX_NAMES)
    );
}
