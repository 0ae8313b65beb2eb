use super::*;

/// One watch event of Pod `p` (UID `u-p`).
#[derive(Clone, Copy)]
enum Ev {
    /// An add or change showing this phase; `true`: its deletion has begun.
    Apply(&'static str, bool),
    /// The delete event, with the last phase.
    Delete(&'static str),
    /// A relist that no longer has the Pod.
    Relisted,
}

fn pod(phase: &str, deleting: bool) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": "p",
            "uid": "u-p",
            "deletionTimestamp": deleting.then_some("2026-01-01T00:00:00Z"),
        },
        "spec": { "containers": [] },
        "status": { "phase": phase },
    }))
    .unwrap()
}

/// What the tick saw before the watch's count: the Pod's end and check, if any.
type Tick = Option<(Ending, Check)>;

/// The Pod in the pool: its end, whether it is lost, its check.
type Counted = (Option<Ending>, bool, Option<Check>);

/// A case: its name, the watch's events, the guest's exit code, the tick's sighting, the count.
type Case = (&'static str, &'static [Ev], Option<i32>, Tick, Counted);

/// The pool after one Pod's `events` (the guest recorded `exit`) are counted over `tick`:
/// its end, whether it is lost, its check.
fn counted(events: &[Ev], exit: Option<i32>, tick: Tick) -> (Option<Ending>, bool, Option<Check>) {
    let mut ends = Ends::new();
    let exit_of = |uid: &str| {
        assert_eq!(uid, "u-p");
        exit
    };
    for ev in events {
        match *ev {
            Ev::Apply(phase, deleting) => {
                observe(&mut ends, &pod(phase, deleting), false, Some(&exit_of));
            }
            Ev::Delete(phase) => observe(&mut ends, &pod(phase, true), true, Some(&exit_of)),
            Ev::Relisted => relisted(&mut ends, &BTreeSet::new()),
        }
    }
    let mut state = PoolState {
        created: 1,
        ..PoolState::default()
    };
    if let Some((e, c)) = tick {
        state.ended.insert("p".into(), e);
        state.checks.insert("p".into(), c);
    }
    count(&mut state, &ends);
    // Counting again changes nothing: each end counts once.
    let once = state.clone();
    count(&mut state, &ends);
    assert_eq!(
        (&state.ended, &state.lost, &state.checks),
        (&once.ended, &once.lost, &once.checks)
    );
    assert!(state.ended.len() + state.lost.len() <= 1);
    let ended = state.ended.get("p").copied();
    (
        ended,
        state.lost.contains("p"),
        state.checks.get("p").copied(),
    )
}

#[test]
fn every_end_the_watch_saw_counts_once_and_a_pod_deleted_unended_is_lost() {
    use Ev::{Apply, Delete, Relisted};
    let ok = Some(Ending::Succeeded);
    let failed = Some(Ending::Failed);
    let passed = Some(Check::Passed);
    #[rustfmt::skip]
    let table: [Case; 10] = [
        ("only the watch saw its end (PodGC deleted it before a tick)",
            &[Apply("Running", false), Apply("Succeeded", false), Apply("Succeeded", true), Delete("Succeeded")],
            Some(0), None, (ok, false, passed)),
        ("seen ended by both: counted once, the tick's check stands",
            &[Apply("Running", false), Apply("Succeeded", false)],
            Some(0), Some((Ending::Succeeded, Check::Passed)), (ok, false, passed)),
        ("deleted by PodGC while Running: lost, not ended",
            &[Apply("Running", false), Apply("Running", true), Delete("Running")],
            Some(0), None, (None, true, None)),
        ("deleted before it was ever Running: lost",
            &[Apply("Pending", false), Delete("Pending")],
            None, None, (None, true, None)),
        ("first seen ended in its delete event, its share gone: not checked",
            &[Apply("Running", false), Delete("Succeeded")],
            None, None, (ok, false, Some(Check::NotChecked))),
        ("first seen ended while deleting, exit code still there: checked",
            &[Apply("Running", false), Apply("Failed", true)],
            Some(3), None, (failed, false, Some(Check::Rejected(3)))),
        ("the tick found no exit code once deleting, the watch had read it",
            &[Apply("Succeeded", false)],
            Some(0), Some((Ending::Succeeded, Check::NotChecked)), (ok, false, passed)),
        ("the watch came too late, the tick had read the exit code",
            &[Delete("Succeeded")],
            None, Some((Ending::Succeeded, Check::Passed)), (ok, false, passed)),
        ("missing from a relist while Running: lost",
            &[Apply("Running", false), Relisted],
            Some(0), None, (None, true, None)),
        ("missing from a relist after its end was seen: ended",
            &[Apply("Running", false), Apply("Succeeded", false), Relisted],
            Some(0), None, (ok, false, passed)),
    ];
    for (case, events, exit, tick, want) in table {
        assert_eq!(counted(events, exit, tick), want, "{case}");
    }
}

#[test]
fn without_a_job_no_check_is_made_and_running_counts_as_ran() {
    let mut ends = Ends::new();
    observe(&mut ends, &pod("Running", false), false, None);
    observe(&mut ends, &pod("Failed", false), false, None);
    let mut state = PoolState::default();
    count(&mut state, &ends);
    assert!(state.ran.contains("p"));
    assert_eq!(state.ended.get("p"), Some(&Ending::Failed));
    assert!(state.checks.is_empty());
}
