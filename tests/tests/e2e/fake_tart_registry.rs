//! fake-tart's shared registry bandwidth (`registry_dir` + `registry_mb_per_s`): every pull
//! active in the directory takes an equal share at each simulated second, capped by its Mac's
//! `pull_mb_per_s`; a killed pull stops counting. Durations are read as simulated seconds —
//! one progress line per simulated second while each second adds at least 1 % — never from
//! the wall clock.

use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tart_kubelet_tests::fake::{FakeHome, ImageKnob, Knobs, TartOutput, bandwidth, poll_until};

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");
const IMG: &str = "ghcr.io/cirruslabs/macos-tahoe-base:v1";

/// A 1 GB image, 100 MB/s per Mac and 100 MB/s for the whole registry: alone, a pull is 10
/// simulated seconds (0 %, 10 %, …, 100 %: 11 lines).
fn knobs(registry: &std::path::Path, scale: f64) -> Knobs {
    Knobs::new()
        .with_latency_scale(scale)
        .with_pull_mb_per_s(100.0)
        .with_shared_registry(registry, 100.0)
        .with_image("default", ImageKnob::sized(1.0, 20))
}

fn home_on(registry: &std::path::Path, scale: f64) -> FakeHome {
    let h = FakeHome::new().expect("temp home");
    h.set_knobs(&knobs(registry, scale)).unwrap();
    h
}

/// The percentages a pull printed, in order.
fn percents(out: &TartOutput) -> Vec<u32> {
    out.lines()
        .iter()
        .filter_map(|l| l.strip_suffix('%')?.parse().ok())
        .collect()
}

#[tokio::test]
async fn a_pull_alone_gets_its_own_speed_and_half_while_another_pull_is_active() {
    let registry = tempfile::tempdir().unwrap();
    let h = home_on(registry.path(), 0.001);
    let alone = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!(alone.code, Some(0), "{alone:?}");
    assert_eq!(percents(&alone), (0..=100).step_by(10).collect::<Vec<_>>());

    // Another Mac's pull holds a place in the registry for the whole of the second pull.
    let other = bandwidth::register(registry.path()).unwrap();
    let h2 = home_on(registry.path(), 0.001);
    let shared = h2.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!(shared.code, Some(0), "{shared:?}");
    assert_eq!(percents(&shared), (0..=100).step_by(5).collect::<Vec<_>>());
    drop(other);
    assert_eq!(bandwidth::active_pulls(registry.path()), 0, "entries left");
}

#[tokio::test]
async fn two_concurrent_pulls_of_two_macs_each_take_about_twice_as_long_as_one_alone() {
    let registry = tempfile::tempdir().unwrap();
    // 50 ms per simulated second: the two pulls overlap for all but their first steps.
    let (a, b) = (
        home_on(registry.path(), 0.05),
        home_on(registry.path(), 0.05),
    );
    let (ra, rb) = tokio::join!(a.tart(FT, &["pull", IMG]), b.tart(FT, &["pull", IMG]));
    for out in [ra.unwrap(), rb.unwrap()] {
        assert_eq!(out.code, Some(0), "{out:?}");
        let p = percents(&out);
        // Alone: 11 lines (10 simulated seconds); fully shared: 21 (20 s).
        assert!(
            (17..=21).contains(&p.len()),
            "expected about twice the 10 simulated seconds of a lone pull: {p:?}"
        );
        assert_eq!(p.last(), Some(&100));
    }
    assert_eq!(bandwidth::active_pulls(registry.path()), 0);
}

#[tokio::test]
async fn a_sigkilled_pull_stops_taking_a_share_of_the_registry() {
    let registry = tempfile::tempdir().unwrap();
    let victim = home_on(registry.path(), 0.05);
    // 25 GB: 250 simulated seconds, far longer than the test.
    victim
        .set_knobs(&knobs(registry.path(), 0.05).with_image("default", ImageKnob::sized(25.0, 50)))
        .unwrap();
    let child = victim
        .command(FT)
        .args(["pull", IMG])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        poll_until(Duration::from_secs(10), || bandwidth::active_pulls(
            registry.path()
        ) == 1)
        .await,
        "the pull never registered"
    );
    kill(Pid::from_raw(child.id().unwrap() as i32), Signal::SIGKILL).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .unwrap()
        .unwrap()
        .status;
    assert_eq!(status.code(), None, "killed by signal");
    assert!(
        std::fs::read_dir(registry.path()).unwrap().count() >= 1,
        "a SIGKILLed pull cannot remove its entry"
    );
    assert_eq!(bandwidth::active_pulls(registry.path()), 0);

    let h = home_on(registry.path(), 0.001);
    let out = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(percents(&out), (0..=100).step_by(10).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_stalled_pull_gives_its_share_back() {
    use tart_kubelet_tests::fake::Rule;
    let registry = tempfile::tempdir().unwrap();
    let stalled = home_on(registry.path(), 0.001);
    stalled
        .set_knobs(&knobs(registry.path(), 0.001).with_rule(Rule::stall("pull", 30)))
        .unwrap();
    let child = stalled
        .command(FT)
        .args(["pull", IMG])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        poll_until(Duration::from_secs(10), || {
            std::fs::read_to_string(stalled.pull_tmp_dir(IMG).join(".fake-progress"))
                .is_ok_and(|p| p.trim() == "30")
                && bandwidth::active_pulls(registry.path()) == 0
        })
        .await,
        "the pull never stalled, or kept its share"
    );
    let h = home_on(registry.path(), 0.001);
    let out = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!(percents(&out), (0..=100).step_by(10).collect::<Vec<_>>());
    kill(Pid::from_raw(child.id().unwrap() as i32), Signal::SIGKILL).unwrap();
}
