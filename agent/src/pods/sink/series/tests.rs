use super::*;

fn key(uid: &str, reason: &str, note: &str) -> Key {
    Key {
        uid: Some(uid.into()),
        namespace: Some("ci".into()),
        name: Some("runner".into()),
        reason: reason.into(),
        note: note.into(),
        warning: true,
    }
}

fn patch(name: &str, count: i32) -> Step {
    Step::Patch {
        name: name.into(),
        count,
    }
}

#[test]
fn repeats_within_the_window_count_into_one_event() {
    let t0 = Instant::now();
    let s = Duration::from_secs(1);
    let mut c = Correlator::default();
    let failed = key("u1", "Unhealthy", "Readiness probe failed: HTTP 503");
    assert_eq!(c.observe(&failed, t0), Step::Create);
    c.created(failed.clone(), "runner.a".into(), t0);
    assert_eq!(c.observe(&failed, t0 + 2 * s), patch("runner.a", 2));
    assert_eq!(c.observe(&failed, t0 + 4 * s), patch("runner.a", 3));
    // The window runs from the last occurrence.
    assert_eq!(
        c.observe(&failed, t0 + 4 * s + WINDOW - s),
        patch("runner.a", 4)
    );
    assert_eq!(
        c.observe(&failed, t0 + 4 * s + 2 * WINDOW),
        Step::Create,
        "after a quiet window a new Event"
    );
}

#[test]
fn another_message_reason_type_or_object_is_another_event() {
    let t0 = Instant::now();
    let mut c = Correlator::default();
    let a = key("u1", "Unhealthy", "Readiness probe failed: HTTP 503");
    c.created(a.clone(), "runner.a".into(), t0);
    let others = [
        key("u1", "Unhealthy", "Readiness probe failed: HTTP 500"),
        key("u1", "ProbeWarning", "Readiness probe failed: HTTP 503"),
        key("u2", "Unhealthy", "Readiness probe failed: HTTP 503"),
        Key {
            warning: false,
            ..a.clone()
        },
    ];
    for (i, k) in others.iter().enumerate() {
        assert_eq!(c.observe(k, t0), Step::Create, "case {i}");
    }
    assert_eq!(c.observe(&a, t0), patch("runner.a", 2));
}

#[test]
fn after_a_failure_or_once_the_object_is_gone_the_next_occurrence_creates() {
    let t0 = Instant::now();
    let mut c = Correlator::default();
    let a = key("u1", "Unhealthy", "x");
    c.created(a.clone(), "runner.a".into(), t0);
    c.forget(&a);
    assert_eq!(c.observe(&a, t0), Step::Create);
    c.created(a.clone(), "runner.b".into(), t0);
    c.forget_object("u2");
    assert_eq!(c.observe(&a, t0), patch("runner.b", 2));
    c.forget_object("u1");
    assert_eq!(c.observe(&a, t0), Step::Create);
}
