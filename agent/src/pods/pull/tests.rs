use super::*;

#[test]
fn base64_round_trips_known_values() {
    assert_eq!(base64_decode("dTpw").unwrap(), b"u:p");
    assert_eq!(base64_decode("dXNlcjpwYXNz").unwrap(), b"user:pass");
    assert_eq!(base64_decode("YQ==").unwrap(), b"a");
    assert!(base64_decode("a").is_none());
    assert!(base64_decode("!!!!").is_none());
}

#[test]
fn dockerconfig_entry_is_matched_by_host() {
    let j = br#"{"auths":{"https://ghcr.io/v1/":{"username":"u","password":"p$(x);'\"\n"},
                    "other.io":{"auth":"dXNlcjpwYXNz"}}}"#;
    let c = from_dockerconfig(j, "ghcr.io").unwrap();
    assert_eq!(c.username, "u");
    assert_eq!(c.password, "p$(x);'\"\n");
    assert_eq!(c.hostname.as_deref(), Some("ghcr.io"));
    let c = from_dockerconfig(j, "other.io").unwrap();
    assert_eq!((c.username.as_str(), c.password.as_str()), ("user", "pass"));
    assert!(from_dockerconfig(j, "docker.io").is_none());
    assert!(from_dockerconfig(b"not json", "ghcr.io").is_none());
}

fn creds(user: &str) -> Option<Credentials> {
    Some(Credentials {
        username: user.into(),
        password: "p".into(),
        hostname: Some("ghcr.io".into()),
    })
}

#[tokio::test(start_paused = true)]
async fn pulls_are_shared_only_between_the_same_image_and_credentials() {
    let img = "ghcr.io/cirruslabs/macos:15";
    let tart = Arc::new(tart::testing::MemTart::new().with_registry([img]));
    tart.set_latency(tart::Op::Pull, std::time::Duration::from_secs(5));
    let pulls = Pulls::default();
    let p = |c| pulls.pull(tart.clone(), img, c);
    let (a, b, c, d) = tokio::join!(p(creds("a")), p(creds("a")), p(creds("b")), p(None));
    assert!(a.is_ok() && b.is_ok() && c.is_ok() && d.is_ok());
    assert_eq!(
        tart.calls_of(tart::Op::Pull).len(),
        3,
        "same credentials share one pull; other or no credentials pull on their own"
    );
    assert!(
        pulls.inflight.lock().unwrap().is_empty(),
        "entries left behind"
    );
}
