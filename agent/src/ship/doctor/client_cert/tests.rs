use std::time::Duration;

use super::*;

const DAY: Duration = Duration::from_secs(86_400);

fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + 20_000 * DAY
}

fn cert() -> Found {
    Found::Certificate(Validity {
        not_before: t0(),
        not_after: t0() + 100 * DAY,
    })
}

#[test]
fn the_verdict_follows_the_expiry_and_whether_anything_renews_it() {
    let cases = [
        // (found, bootstrap, now, status, says)
        (cert(), false, t0() + DAY, Status::Ok, "valid until"),
        (cert(), true, t0() + 80 * DAY, Status::Ok, "renews it"),
        (
            cert(),
            false,
            t0() + 80 * DAY,
            Status::Warn,
            "nothing renews it",
        ),
        (cert(), false, t0() + 100 * DAY, Status::Fail, "expired"),
        (cert(), true, t0() + 101 * DAY, Status::Fail, "expired"),
        (cert(), true, t0() - DAY, Status::Fail, "not valid before"),
        (
            Found::NoCertificate,
            false,
            t0(),
            Status::Skipped,
            "without a client certificate",
        ),
        (
            Found::NoKubeconfig,
            true,
            t0(),
            Status::Ok,
            "--bootstrap-kubeconfig",
        ),
        (
            Found::NoKubeconfig,
            false,
            t0(),
            Status::Fail,
            "does not exist",
        ),
        (
            Found::Unreadable("bad PEM".into()),
            true,
            t0(),
            Status::Fail,
            "bad PEM",
        ),
    ];
    for (found, boot, now, status, says) in cases {
        let c = client_certificate_check("mac-1", &found, boot, now);
        assert_eq!(c.name, "client-certificate");
        assert_eq!(
            c.status, status,
            "{found:?} bootstrap={boot}: {}",
            c.message
        );
        assert!(c.message.contains(says), "{found:?}: {}", c.message);
        if status >= Status::Warn {
            assert!(c.fix.is_some(), "{found:?}: a problem comes with a fix");
        }
    }
}

#[test]
fn the_expiry_is_named_and_the_fix_names_the_node() {
    let c = client_certificate_check("mac-1", &cert(), false, t0() + 80 * DAY);
    assert!(
        c.message.contains(&rfc3339(t0() + 100 * DAY)),
        "{}",
        c.message
    );
    let fix = c.fix.unwrap();
    assert!(fix.contains("CN=system:node:mac-1"), "{fix}");
    assert!(fix.contains("--bootstrap-kubeconfig"), "{fix}");
}
