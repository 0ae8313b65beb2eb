//! Tests of the token rules.

use super::*;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + s).unwrap()
}

fn token(name: &str, created: i64, renewed: i64) -> Token {
    Token {
        name: name.into(),
        created: at(created),
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
    assert!(admitted("b", &tokens, 2, now), "ties go by name");
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
}

#[test]
fn a_crashed_holders_token_frees_itself_after_its_duration() {
    let tokens = [token("crashed", 0, 0), token("waiting", 10, 40)];
    assert!(!admitted("waiting", &tokens, 1, at(29)));
    assert!(
        admitted("waiting", &tokens, 1, at(30)),
        "30 s after its last renewal"
    );
}

#[test]
fn names_and_keys_fit_kubernetes() {
    let k = image_key("ghcr.io/acme/macos-runner:v2");
    assert_eq!(k.len(), 12);
    assert!(k.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(k, image_key("ghcr.io/acme/macos-runner:v2"), "stable");
    assert_ne!(k, image_key("ghcr.io/acme/macos-runner:v3"));
    assert_eq!(lease_name(&k, "mac-1"), format!("tart-pull-{k}-mac-1"));
    let long = "n".repeat(253);
    assert!(lease_name(&k, &long).len() <= 253);
    assert_eq!(PullSource::Pod.as_str(), "pod");
    assert_eq!(PullSource::Prepull.as_str(), "prepull");
}
