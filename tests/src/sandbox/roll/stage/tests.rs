use super::*;

const BOUND: Duration = Duration::from_secs(60);

fn seen(created: u64, holds: bool, secs: u64) -> Seen {
    Seen {
        created,
        fleet_holds_next: holds,
        rolling_for: Duration::from_secs(secs),
    }
}

/// Drives the machine with `seen` until it stops moving; returns the steps taken.
fn run(stage: &mut Stage, b: &Budget, s: Seen) -> Vec<Step> {
    let mut steps = Vec::new();
    while let Some(step) = next(*stage, b, &s, BOUND) {
        steps.push(step);
        *stage = apply(step);
    }
    steps
}

#[test]
fn a_run_goes_through_both_strategies_in_order_with_the_pod_budget() {
    let b = Budget::new(30);
    let mut st = Stage::Before(Strategy::OnDemand);
    assert_eq!(pod_image(st), IMAGES[0]);
    assert!(run(&mut st, &b, seen(4, false, 0)).is_empty());
    assert_eq!(b.creation_cap(st), 5);
    assert_eq!(
        run(&mut st, &b, seen(5, false, 0)),
        [Step::BeginRoll(Strategy::OnDemand)]
    );
    // On demand, the Pods switch as the roll begins.
    assert_eq!(pod_image(st), IMAGES[1]);
    assert_eq!(b.creation_cap(st), 15);
    assert_eq!(
        run(&mut st, &b, seen(9, true, 20)),
        [Step::EndRoll {
            strategy: Strategy::OnDemand,
            completed: true
        }]
    );
    assert_eq!(run(&mut st, &b, seen(15, false, 0)), [Step::EndOnDemand]);
    assert_eq!(st, Stage::Before(Strategy::Prepull));
    assert_eq!(pod_image(st), IMAGES[1]);
    assert_eq!(
        run(&mut st, &b, seen(20, false, 0)),
        [Step::BeginRoll(Strategy::Prepull)]
    );
    // With pre-pull, the Pods keep the old image while the fleet pulls the new one.
    assert_eq!(pod_image(st), IMAGES[1]);
    assert_eq!(b.creation_cap(st), 25);
    assert!(run(&mut st, &b, seen(25, false, 10)).is_empty());
    assert_eq!(
        run(&mut st, &b, seen(25, true, 12)),
        [Step::EndRoll {
            strategy: Strategy::Prepull,
            completed: true
        }]
    );
    assert_eq!(pod_image(st), IMAGES[2]);
    assert_eq!(b.creation_cap(st), 30);
    assert!(run(&mut st, &b, seen(30, true, 0)).is_empty());
}

#[test]
fn a_roll_that_outlasts_its_bound_ends_uncompleted() {
    let b = Budget::new(12);
    let mut st = Stage::Rolling(Strategy::Prepull);
    assert!(run(&mut st, &b, seen(8, false, 59)).is_empty());
    assert_eq!(
        run(&mut st, &b, seen(8, false, 60)),
        [Step::EndRoll {
            strategy: Strategy::Prepull,
            completed: false
        }]
    );
    assert_eq!(st, Stage::After(Strategy::Prepull));
}

#[test]
fn small_runs_still_give_every_part_a_pod() {
    let b = Budget::new(6);
    let caps: Vec<u64> = [
        Stage::Before(Strategy::OnDemand),
        Stage::Rolling(Strategy::OnDemand),
        Stage::Before(Strategy::Prepull),
        Stage::Rolling(Strategy::Prepull),
        Stage::After(Strategy::Prepull),
    ]
    .iter()
    .map(|s| b.creation_cap(*s))
    .collect();
    assert_eq!(caps, [1, 3, 4, 5, 6]);
}
