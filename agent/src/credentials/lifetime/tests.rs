use super::*;

const DAY: Duration = Duration::from_secs(86_400);

fn year_from(start: SystemTime) -> Validity {
    Validity {
        not_before: start,
        not_after: start + 100 * DAY,
    }
}

#[test]
fn standing_follows_the_validity_window() {
    let t0 = SystemTime::UNIX_EPOCH + 1000 * DAY;
    let v = year_from(t0);
    let cases = [
        (None, t0, Standing::Missing),
        (Some(v), t0 - Duration::from_secs(1), Standing::NotYetValid),
        (Some(v), t0, Standing::Valid),
        (Some(v), t0 + 99 * DAY, Standing::Valid),
        (Some(v), t0 + 100 * DAY, Standing::Expired),
        (Some(v), t0 + 200 * DAY, Standing::Expired),
    ];
    for (validity, now, want) in cases {
        assert_eq!(standing(validity, now), want, "{validity:?} at {now:?}");
        assert_eq!(want.needs_bootstrap(), want != Standing::Valid);
    }
}

#[test]
fn renewal_uses_the_current_certificate_while_valid_then_the_bootstrap_token() {
    let cases = [
        (Standing::Valid, false, Credentials::Current),
        (Standing::Valid, true, Credentials::Current),
        (Standing::Expired, true, Credentials::Bootstrap),
        (Standing::NotYetValid, true, Credentials::Bootstrap),
        (Standing::Missing, true, Credentials::Bootstrap),
        (Standing::Expired, false, Credentials::None),
        (Standing::Missing, false, Credentials::None),
    ];
    for (s, boot, want) in cases {
        assert_eq!(renewal_credentials(s, boot), want, "{s:?} bootstrap={boot}");
    }
}

#[test]
fn renewal_comes_at_70_to_90_percent_of_the_lifetime() {
    let t0 = SystemTime::UNIX_EPOCH + 1000 * DAY;
    let v = year_from(t0);
    let cases = [
        // (now, draw, wait)
        (t0, 0.0, 70 * DAY),
        (t0, 0.5, 80 * DAY),
        (t0, 0.999_999, 90 * DAY),
        (t0 + 10 * DAY, 0.0, 60 * DAY),
        (t0 + 75 * DAY, 0.0, Duration::ZERO),
        (t0 + 75 * DAY, 0.5, 5 * DAY),
        (t0 + 150 * DAY, 0.5, Duration::ZERO),
    ];
    for (now, draw, want) in cases {
        let got = next_renewal(v, now, draw);
        let diff = got.abs_diff(want);
        assert!(
            diff < Duration::from_secs(10),
            "draw {draw}: {got:?} != {want:?}"
        );
    }
}

#[test]
fn the_renewal_window_opens_at_70_percent() {
    let t0 = SystemTime::UNIX_EPOCH + 1000 * DAY;
    let v = year_from(t0);
    assert!(!in_renewal_window(v, t0));
    assert!(!in_renewal_window(v, t0 + 69 * DAY));
    assert!(in_renewal_window(v, t0 + 70 * DAY));
    assert!(in_renewal_window(v, t0 + 101 * DAY));
}
