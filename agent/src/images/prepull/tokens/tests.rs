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
fn a_claim_goes_on_while_fewer_than_the_cap_others_are_live() {
    let tokens = [
        token("a", 0, 20),
        token("b", 5, 20),
        token("c", 5, 20),
        token("dead", -100, -60),
    ];
    let now = at(25);
    // (node, its claim's time, cap, admitted)
    let table = [
        ("a", 0, 3, true),
        ("a", 0, 2, false),
        ("c", 5, 3, true),
        ("c", 5, 2, false),
        ("a", 1, 9, false),
        ("missing", 0, 9, false),
        ("dead", -100, 2, false),
        ("dead", -100, 3, false),
        ("dead", -100, 4, true),
    ];
    for (node, acquired, cap, want) in table {
        assert_eq!(
            admitted(node, at(acquired), &tokens, cap, now),
            want,
            "{node} claimed at {acquired}, cap {cap}"
        );
    }
    assert_eq!(others_live("a", &tokens, now), 2);
}

#[test]
fn only_the_claim_just_made_counts_as_written() {
    let tokens = [token("a", 0, 20)];
    assert!(claim_listed("a", at(0), &tokens));
    assert!(
        !claim_listed("a", at(7), &tokens),
        "an earlier token whose removal has not landed is not this claim"
    );
    assert!(!claim_listed("b", at(0), &tokens));
}

#[test]
fn a_crashed_holders_token_frees_itself_with_its_heartbeat() {
    let tokens = [token("crashed", 0, 0), token("waiting", 10, 40)];
    assert!(!admitted("waiting", at(10), &tokens, 1, at(29)));
    assert!(
        admitted("waiting", at(10), &tokens, 1, at(30)),
        "30 s after its last renewal"
    );
}

/// One step of an agent in [`interleavings`]: its token's write lands, or it lists and decides.
#[derive(Clone, Copy)]
enum Step {
    Write(usize),
    List(usize),
}

/// Every order of `n` agents' steps in which each agent's write lands before its own list.
fn interleavings(n: usize) -> Vec<Vec<Step>> {
    fn go(done: &mut Vec<Step>, state: &mut Vec<u8>, all: &mut Vec<Vec<Step>>) {
        if state.iter().all(|&s| s == 2) {
            all.push(done.clone());
            return;
        }
        for a in 0..state.len() {
            let step = match state[a] {
                0 => Step::Write(a),
                1 => Step::List(a),
                _ => continue,
            };
            state[a] += 1;
            done.push(step);
            go(done, state, all);
            done.pop();
            state[a] -= 1;
        }
    }
    let mut all = Vec::new();
    go(&mut Vec::new(), &mut vec![0; n], &mut all);
    all
}

/// Agent `i` (Node `mac-i`) took its token at second `i` and writes it late, in the order the
/// interleaving says; a refused agent's removal lands at once (the most other agents can be
/// admitted). Returns the most pre-pulls going on at once.
fn most_at_once(order: &[Step], cap: u32) -> usize {
    let name = |i: usize| format!("mac-{i}");
    let mut on_leases: Vec<Token> = Vec::new();
    let mut going_on = 0;
    for step in order {
        match *step {
            Step::Write(i) => on_leases.push(token(&name(i), i as i64, 10)),
            Step::List(i) => {
                if admitted(&name(i), at(i as i64), &on_leases, cap, at(11)) {
                    going_on += 1;
                } else {
                    on_leases.retain(|t| t.node != name(i));
                }
            }
        }
    }
    going_on
}

#[test]
fn no_order_of_late_writes_lets_more_than_the_cap_pull() {
    let orders = interleavings(4);
    assert_eq!(orders.len(), 2520);
    for cap in 1..=3 {
        for order in &orders {
            assert!(
                most_at_once(order, cap) <= cap as usize,
                "cap {cap} overrun by the order {:?}",
                order
                    .iter()
                    .map(|s| match s {
                        Step::Write(i) => format!("write {i}"),
                        Step::List(i) => format!("list {i}"),
                    })
                    .collect::<Vec<_>>()
            );
        }
        // One agent at a time, each done before the next claims: the cap fills.
        let one_by_one: Vec<Step> = (0..4)
            .flat_map(|i| [Step::Write(i), Step::List(i)])
            .collect();
        assert_eq!(most_at_once(&one_by_one, cap), cap as usize);
    }
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
    let now = Timestamp::now();
    assert_eq!(
        annotation_value(PullSource::Pod, now)
            .split_once(' ')
            .unwrap()
            .1
            .parse::<Timestamp>()
            .unwrap(),
        now,
        "a claim's time reads back exactly (it identifies the claim)"
    );
    assert_eq!(PullSource::Pod.as_str(), "pod");
}
