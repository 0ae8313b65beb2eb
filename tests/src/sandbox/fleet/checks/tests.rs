use super::*;

fn report(completed: bool, on_new: u64, peak: u32, cap: u32) -> FleetReport {
    let mut f = FleetReport::default();
    f.roll.completed = completed;
    f.roll.pods_on_new_image = on_new;
    f.roll.peak_concurrent_pulls = peak;
    f.roll.pull_cap = cap;
    f
}

fn held(f: &FleetReport) -> Vec<(String, bool)> {
    invariants(f).into_iter().map(|i| (i.name, i.ok)).collect()
}

#[test]
fn the_roll_must_complete_with_pods_on_the_new_image_and_pulls_within_the_cap() {
    let ok = |n: &str, v| (n.to_string(), v);
    assert_eq!(
        held(&report(true, 5, 10, 10)),
        vec![
            ok("fleet_roll_completed", true),
            ok("fleet_prepull_within_cap", true)
        ]
    );
    assert_eq!(
        held(&report(false, 0, 3, 10))[0],
        ok("fleet_roll_completed", false)
    );
    assert_eq!(
        held(&report(true, 0, 3, 10))[0],
        ok("fleet_roll_completed", false)
    );
    assert_eq!(
        held(&report(true, 5, 11, 10))[1],
        ok("fleet_prepull_within_cap", false)
    );
}
