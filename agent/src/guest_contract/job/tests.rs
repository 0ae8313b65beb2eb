use super::*;

#[test]
fn the_job_file_says_busy_or_idle_and_anything_else_keeps_the_last_mark() {
    let cases = [
        ("busy\n", Some(JobActivity::Busy)),
        ("busy", Some(JobActivity::Busy)),
        (" idle \n", Some(JobActivity::Idle)),
        ("", None),
        ("bu", None),
        ("BUSY", None),
    ];
    for (text, want) in cases {
        assert_eq!(parse_job_mark(text), want, "{text:?}");
    }
}

#[test]
fn only_a_busy_job_is_waited_for_and_the_condition_says_which() {
    assert!(JobActivity::Busy.is_busy());
    assert!(!JobActivity::Idle.is_busy() && !JobActivity::Ended.is_busy());
    assert_eq!(JobActivity::Busy.condition(), (true, "JobBusy"));
    assert_eq!(JobActivity::Ended.condition(), (false, "JobEnded"));
}
