use super::*;

fn p(v: &[(&str, PrepullState)]) -> Progress {
    v.iter().map(|(i, s)| ((*i).to_owned(), *s)).collect()
}

#[test]
fn the_condition_says_where_the_declared_images_stand() {
    use PrepullState::*;
    let cases: [(Progress, (bool, &str, &str)); 5] = [
        (
            p(&[]),
            (
                true,
                "NoImagesDeclared",
                "no image is declared for this Node",
            ),
        ),
        (
            p(&[("a", Ready)]),
            (true, "AllImagesReady", "1 of 1 declared images ready"),
        ),
        (
            p(&[("a", Ready), ("b", Waiting)]),
            (
                false,
                "WaitingForToken",
                "1 of 2 declared images ready; waiting: b",
            ),
        ),
        (
            p(&[("a", Pulling), ("b", Waiting)]),
            (false, "Pulling", "0 of 2 declared images ready; pulling: a"),
        ),
        (
            p(&[("a", Failed), ("b", Pulling)]),
            (
                false,
                "PrepullFailed",
                "0 of 2 declared images ready; failed: a",
            ),
        ),
    ];
    for (progress, (status, reason, message)) in cases {
        assert_eq!(summary(&progress), (status, reason, message.to_owned()));
    }
}
