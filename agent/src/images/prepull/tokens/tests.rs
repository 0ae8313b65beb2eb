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
    use Verdict::{GiveBack, Go, Recheck, Unwritten};
    let tokens = [
        token("a", 0, 20),
        token("b", 5, 20),
        token("c", 5, 20),
        token("dead", -100, -60),
    ];
    let now = at(25);
    // (node, its claim's time, cap, verdict)
    let table = [
        ("a", 0, 3, Go),
        ("a", 0, 2, Recheck),
        ("b", 5, 2, Recheck),
        ("c", 5, 2, GiveBack),
        ("c", 5, 3, Go),
        ("a", 1, 9, Unwritten),
        ("missing", 0, 9, Unwritten),
        ("dead", -100, 2, GiveBack),
        ("dead", -100, 3, GiveBack),
        ("dead", -100, 4, Go),
    ];
    for (node, acquired, cap, want) in table {
        assert_eq!(
            verdict(node, at(acquired), &tokens, cap, now),
            want,
            "{node} claimed at {acquired}, cap {cap}"
        );
    }
    assert_eq!(others_live("a", &tokens, now), 2);
}

#[test]
fn a_crashed_holders_token_frees_itself_with_its_heartbeat() {
    let tokens = [token("crashed", 0, 0), token("waiting", 10, 40)];
    assert_eq!(
        verdict("waiting", at(10), &tokens, 1, at(29)),
        Verdict::GiveBack
    );
    assert_eq!(
        verdict("waiting", at(10), &tokens, 1, at(30)),
        Verdict::Go,
        "30 s after its last renewal"
    );
}

/// One step of an agent in [`interleavings`]: its token's write lands, or it lists and decides.
#[derive(Debug, Clone, Copy)]
enum Step {
    Write(usize),
    List(usize),
}

/// Every order of `n` agents' steps, each agent's write landing before its `lists` lists.
fn interleavings(n: usize, lists: u8) -> Vec<Vec<Step>> {
    fn go(done: &mut Vec<Step>, state: &mut Vec<u8>, lists: u8, all: &mut Vec<Vec<Step>>) {
        if state.iter().all(|&s| s > lists) {
            all.push(done.clone());
            return;
        }
        for a in 0..state.len() {
            let step = match state[a] {
                0 => Step::Write(a),
                s if s <= lists => Step::List(a),
                _ => continue,
            };
            state[a] += 1;
            done.push(step);
            go(done, state, lists, all);
            done.pop();
            state[a] -= 1;
        }
    }
    let mut all = Vec::new();
    go(&mut Vec::new(), &mut vec![0; n], lists, &mut all);
    all
}

/// Agent `i` (Node `mac-i`) took its token at second `i` and writes it late, in the order given;
/// it lists until told to go or to give back, giving back at its last list if still waiting; a
/// given-back token's removal lands at once (the most other agents can be let on). Returns how
/// many pre-pulls went on (none ends within the order).
fn going_on(order: &[Step], cap: u32) -> usize {
    let name = |i: usize| format!("mac-{i}");
    let last_list = |i: usize| {
        order
            .iter()
            .rposition(|s| matches!(s, Step::List(a) if *a == i))
    };
    let mut on_leases: Vec<Token> = Vec::new();
    let mut decided = std::collections::BTreeSet::new();
    let mut going = 0;
    for (n, step) in order.iter().enumerate() {
        match *step {
            Step::Write(i) => on_leases.push(token(&name(i), i as i64, 10)),
            Step::List(i) if !decided.contains(&i) => {
                match verdict(&name(i), at(i as i64), &on_leases, cap, at(11)) {
                    Verdict::Go => {
                        going += 1;
                        decided.insert(i);
                    }
                    Verdict::Recheck if last_list(i) != Some(n) => {}
                    _ => {
                        on_leases.retain(|t| t.node != name(i));
                        decided.insert(i);
                    }
                }
            }
            Step::List(_) => {}
        }
    }
    going
}

/// `n` agents claim at once and list in lockstep twice, each round's removals landing after
/// every list of the round. Returns how many pre-pulls went on.
fn in_lockstep(n: usize, cap: u32) -> usize {
    let name = |i: usize| format!("mac-{i}");
    let mut on_leases: Vec<Token> = (0..n).map(|i| token(&name(i), i as i64, 10)).collect();
    let mut waiting: Vec<usize> = (0..n).collect();
    let mut going = 0;
    for round in 0..2 {
        let snapshot = on_leases.clone();
        waiting.retain(
            |&i| match verdict(&name(i), at(i as i64), &snapshot, cap, at(11)) {
                Verdict::Go => {
                    going += 1;
                    false
                }
                Verdict::Recheck if round == 0 => true,
                _ => {
                    on_leases.retain(|t| t.node != name(i));
                    false
                }
            },
        );
    }
    going
}

#[test]
fn no_order_of_late_writes_lets_more_than_the_cap_pull() {
    let mut orders = interleavings(4, 1);
    assert_eq!(orders.len(), 2520);
    orders.extend(interleavings(3, 2));
    assert_eq!(orders.len(), 2520 + 1680);
    for cap in 1..=3 {
        for order in &orders {
            assert!(
                going_on(order, cap) <= cap as usize,
                "cap {cap} overrun by the order {order:?}"
            );
        }
        // One agent at a time, each going on before the next claims: the cap fills; all at
        // once: the oldest claims wait for the others to be given back and go (not none).
        let one_by_one: Vec<Step> = (0..4)
            .flat_map(|i| [Step::Write(i), Step::List(i)])
            .collect();
        assert_eq!(going_on(&one_by_one, cap), cap as usize);
        assert_eq!(in_lockstep(4, cap), cap as usize, "cap {cap}");
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
