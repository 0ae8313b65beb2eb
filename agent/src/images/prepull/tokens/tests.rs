//! Tests of the token rules.

use k8s_openapi::{
    api::coordination::v1::LeaseSpec,
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
};

use super::*;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

fn token(node: &str, acquired: i64, renewed: i64) -> Token {
    Token {
        node: node.into(),
        acquired: at(acquired),
        renewed: at(renewed),
        duration_s: 30,
    }
}

#[test]
fn the_oldest_live_tokens_within_the_cap_go_on() {
    let tokens = [
        token("a", 0, 20),
        token("b", 5, 20),
        token("c", 5, 20),
        token("dead", -100, -60),
    ];
    let now = at(25);
    assert!(admitted("a", &tokens, 2, now));
    assert!(admitted("b", &tokens, 2, now), "ties go by Node");
    assert!(
        !admitted("c", &tokens, 2, now),
        "third of a cap of two gives its token back"
    );
    assert!(admitted("c", &tokens, 3, now));
    assert!(
        !admitted("dead", &tokens, 9, now),
        "an expired token is no one's"
    );
    assert!(!admitted("missing", &tokens, 9, now));
    assert_eq!(others_live("a", &tokens, now), 2);
}

#[test]
fn a_crashed_holders_token_frees_itself_with_its_heartbeat() {
    let tokens = [token("crashed", 0, 0), token("waiting", 10, 40)];
    assert!(!admitted("waiting", &tokens, 1, at(29)));
    assert!(
        admitted("waiting", &tokens, 1, at(30)),
        "30 s after its last renewal"
    );
}

#[test]
fn a_token_is_read_from_its_node_lease() {
    let key = image_key("ghcr.io/acme/macos-runner:v2");
    assert_eq!(key.len(), 12);
    assert_eq!(key, image_key("ghcr.io/acme/macos-runner:v2"), "stable");
    assert_ne!(key, image_key("ghcr.io/acme/macos-runner:v3"));
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("mac-1".into()),
            annotations: Some(
                [(
                    annotation(&key),
                    annotation_value(PullSource::Prepull, at(3)),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            renew_time: Some(MicroTime(at(10))),
            lease_duration_seconds: Some(40),
            ..LeaseSpec::default()
        }),
    };
    assert_eq!(
        Token::of(&lease, &key),
        Some(Token {
            node: "mac-1".into(),
            acquired: at(3),
            renewed: at(10),
            duration_s: 40
        })
    );
    assert_eq!(Token::of(&lease, &image_key("other")), None);
    assert_eq!(PullSource::Pod.as_str(), "pod");
}
