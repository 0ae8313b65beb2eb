use super::*;

#[test]
fn the_access_review_asks_about_this_nodes_subresource() {
    let req = AccessRequest {
        user: UserInfo::new("bob".into(), String::new(), vec!["devs".into()]),
        verb: Verb::Get,
        subresource: Subresource::Proxy,
        node: "mac-1".into(),
    };
    let spec = serde_json::to_value(access_spec(&req)).unwrap();
    assert_eq!(
        spec,
        serde_json::json!({
            "user": "bob",
            "groups": ["devs", "system:authenticated"],
            "resourceAttributes": {
                "verb": "get", "group": "", "version": "v1", "resource": "nodes",
                "subresource": "proxy", "name": "mac-1"
            }
        })
    );
}
