use super::*;

#[test]
fn results_have_stable_labels() {
    let labels: Vec<_> = ProbeResult::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(labels, ["success", "failure", "error"]);
    assert_eq!(Outcome::Warning("w".into()).result(), ProbeResult::Success);
}
