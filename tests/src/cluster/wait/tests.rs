use std::time::Instant;

use super::*;

#[test]
fn unique_names_are_dns_1123_labels_and_distinct() {
    let a = unique("Node_With Lease!");
    let b = unique("Node_With Lease!");
    assert_ne!(a, b);
    for n in [&a, &b, &unique(&"x".repeat(100)), &unique("--")] {
        assert!(n.len() <= 63, "{n}");
        assert!(
            n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{n}"
        );
        assert!(!n.starts_with('-') && !n.ends_with('-'), "{n}");
    }
    assert!(a.starts_with("node-with-lease-"), "{a}");
}

#[tokio::test]
async fn wait_for_returns_the_first_some() {
    let mut n = 0;
    let got = wait_for(Duration::from_secs(5), || {
        n += 1;
        let v = (n >= 3).then_some(n);
        async move { v }
    })
    .await;
    assert_eq!(got, Ok(3));
}

#[tokio::test]
async fn wait_for_gives_up_at_the_deadline_even_if_a_poll_hangs() {
    let t0 = Instant::now();
    let got: Result<(), _> = wait_for(Duration::from_millis(300), || {
        std::future::pending::<Option<()>>()
    })
    .await;
    assert!(got.is_err());
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
}
