//! fake-tart's `pull` and `clone` against the spec texts
//! (docs/reference/tart-cli.md §2.1, §2.2, §1.4, §5): progress lines, the cache layout, the host
//! lock, SIGINT/SIGKILL, MACs and overwrites.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use tart_kubelet_tests::fake::{FakeHome, ImageKnob, Knobs, parse_json, poll_until, small_images};

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");
const IMG: &str = "ghcr.io/cirruslabs/macos-tahoe-base:latest";

fn home() -> FakeHome {
    FakeHome::new().expect("temp home")
}

#[tokio::test]
async fn pull_prints_plain_progress_lines_with_ci_and_fills_the_cache() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    let out = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines = out.lines();
    assert_eq!(
        &lines[..3],
        [
            &format!("pulling {IMG}..."),
            "pulling manifest...",
            "pulling disk (1.0 GB compressed)..."
        ]
    );
    assert_eq!(*lines.last().unwrap(), "pulling NVRAM...");
    let pcts: Vec<u32> = lines[3..lines.len() - 1]
        .iter()
        .map(|l| l.strip_suffix('%').unwrap().parse().unwrap())
        .collect();
    assert_eq!(pcts.first(), Some(&0));
    assert_eq!(pcts.last(), Some(&100));
    assert!(
        pcts.windows(2).all(|w| w[0] < w[1]),
        "percentages must strictly increase: {pcts:?}"
    );
    let repo = h
        .path()
        .join("cache/OCIs/ghcr.io/cirruslabs/macos-tahoe-base");
    let target = fs::read_link(repo.join("latest")).unwrap();
    let target = target.to_str().unwrap();
    assert!(
        target.starts_with("sha256:") && target.len() == 71,
        "{target}"
    );
    let digest_dir = repo.join(target);
    for f in ["config.json", "disk.img", "nvram.bin", "manifest.json"] {
        assert!(digest_dir.join(f).is_file(), "{f} missing");
    }
    let disk = fs::metadata(digest_dir.join("disk.img")).unwrap();
    assert_eq!(disk.len(), 20_000_000_000);
    assert!(disk.blocks() * 512 < 10 << 20, "disk.img must be sparse");
    assert!(
        h.tmp_entries().is_empty(),
        "tmp left behind: {:?}",
        h.tmp_entries()
    );

    let again = h.tart(FT, &["pull", IMG]).await.unwrap();
    let digest_name = format!("ghcr.io/cirruslabs/macos-tahoe-base@{target}");
    assert_eq!(
        again.lines(),
        [
            &format!("pulling {IMG}..."),
            "pulling manifest...",
            &format!("{digest_name} image is already cached and linked!")
        ]
    );
}

#[tokio::test]
async fn pull_without_ci_rewrites_the_progress_line_with_ansi_escapes() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    let out = h
        .command(FT)
        .env_remove("CI")
        .args(["pull", IMG])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // 1 GB at 100 MB/s is 10 simulated seconds: one line per simulated second.
    assert!(text.contains("\n0%\n\x1b[1A\r\x1b[J10%\n"), "{text:?}");
    assert!(text.contains("\x1b[1A\r\x1b[J100%\n"));
}

#[tokio::test]
async fn pull_of_a_local_vm_name_has_nothing_to_do() {
    let h = home();
    h.create_vm("local").unwrap();
    let out = h.tart(FT, &["pull", "local"]).await.unwrap();
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (
            Some(0),
            "\"local\" is a local image, nothing to pull here!\n"
        )
    );
}

#[tokio::test]
async fn a_moved_tag_downloads_the_new_digest_and_gc_drops_the_old_one() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    assert_eq!(h.tart(FT, &["pull", IMG]).await.unwrap().code, Some(0));
    let repo = h
        .path()
        .join("cache/OCIs/ghcr.io/cirruslabs/macos-tahoe-base");
    let old = fs::read_link(repo.join("latest")).unwrap();
    h.set_knobs(
        &small_images(Knobs::new()).with_image(IMG, ImageKnob::sized(1.0, 20).with_revision(1)),
    )
    .unwrap();
    let out = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert!(out.stdout.contains("100%"), "{out:?}");
    let new = fs::read_link(repo.join("latest")).unwrap();
    assert_ne!(old, new);
    assert!(
        !repo.join(&old).exists(),
        "untagged digest must be garbage-collected"
    );
}

#[tokio::test]
async fn pull_by_digest_is_marked_explicitly_pulled_and_survives_gc() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    let name = format!("ghcr.io/x/y@sha256:{}", "ab".repeat(32));
    assert_eq!(h.tart(FT, &["pull", &name]).await.unwrap().code, Some(0));
    let dir = h
        .path()
        .join(format!("cache/OCIs/ghcr.io/x/y/sha256:{}", "ab".repeat(32)));
    assert!(dir.join(".explicitly-pulled").is_file());
    assert_eq!(h.tart(FT, &["prune", "--gc"]).await.unwrap().code, Some(0));
    assert!(dir.is_dir());
}

#[tokio::test]
async fn bad_remote_names_fail_to_parse_with_exit_1() {
    let h = home();
    let out = h
        .tart(FT, &["pull", "ghcr.io/x@sha256:nothex"])
        .await
        .unwrap();
    assert_eq!(out.code, Some(1));
    assert!(
        out.stderr.starts_with("failed to parse remote name: "),
        "{out:?}"
    );
}

#[tokio::test]
async fn pull_concurrency_below_one_is_a_usage_error() {
    let h = home();
    let out = h
        .tart(FT, &["pull", IMG, "--concurrency", "0"])
        .await
        .unwrap();
    assert_eq!(out.code, Some(64));
    assert!(
        out.stderr
            .starts_with("Error: network concurrency cannot be less than 1\nUsage: tart pull"),
        "{out:?}"
    );
}

#[tokio::test]
async fn clone_of_an_uncached_image_pulls_it_first_without_the_pulling_name_line() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    let out = h.tart(FT, &["clone", IMG, "vm1"]).await.unwrap();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.lines()[0], "pulling manifest...");
    assert!(out.stdout.contains("100%\npulling NVRAM...\n"));
    assert!(h.vm_exists("vm1"));
    let cfg = h.vm_config("vm1").unwrap();
    assert_eq!(cfg["version"], 1);
    assert_eq!(cfg["cpuCount"], 4);
    assert_eq!(cfg["memorySize"], 8192u64 << 20);
    assert_eq!(
        fs::metadata(h.vm_dir("vm1").join("disk.img"))
            .unwrap()
            .len(),
        20_000_000_000
    );
    assert!(h.tmp_entries().is_empty(), "{:?}", h.tmp_entries());
}

#[tokio::test]
async fn clone_of_a_cached_image_does_not_contact_the_registry() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    assert_eq!(h.tart(FT, &["pull", IMG]).await.unwrap().code, Some(0));
    // The registry now answers 404, yet the cached image clones silently
    // (docs/reference/tart-cli.md §2.2).
    h.set_knobs(&small_images(Knobs::new()).with_image(IMG, ImageKnob::missing()))
        .unwrap();
    let out = h.tart(FT, &["clone", IMG, "vm1"]).await.unwrap();
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (Some(0), "", "")
    );
    // ...but pull still fetches the manifest, so it fails (docs/reference/tart-cli.md §2.1).
    let out = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!(out.code, Some(1));
}

#[tokio::test]
async fn only_a_colliding_clone_gets_a_new_mac_and_an_existing_target_is_overwritten() {
    let h = home();
    h.set_knobs(&small_images(Knobs::new())).unwrap();
    assert_eq!(
        h.tart(FT, &["clone", IMG, "a"]).await.unwrap().code,
        Some(0)
    );
    assert_eq!(
        h.tart(FT, &["clone", IMG, "b"]).await.unwrap().code,
        Some(0)
    );
    let (a, b) = (h.vm_mac("a").unwrap(), h.vm_mac("b").unwrap());
    assert_ne!(a, b, "b collides with a, so it gets a fresh MAC");
    // Clone a over b: silently replaced (docs/reference/tart-cli.md §2.2).
    fs::write(h.vm_dir("b").join("marker"), b"x").unwrap();
    let out = h.tart(FT, &["clone", "a", "b"]).await.unwrap();
    assert_eq!((out.code, out.stderr.as_str()), (Some(0), ""));
    assert!(!h.vm_dir("b").join("marker").exists());
}

#[tokio::test]
async fn clone_errors_follow_the_spec_exit_codes() {
    let h = home();
    let out = h.tart(FT, &["clone", "nope", "x"]).await.unwrap();
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (Some(2), "the specified VM \"nope\" does not exist\n")
    );
    h.create_vm("src").unwrap();
    let out = h.tart(FT, &["clone", "src", "ghcr.io/a/b"]).await.unwrap();
    assert_eq!(out.code, Some(64));
    assert!(
        out.stderr
            .starts_with("Error: ghcr.io/a/b should be a local name\nUsage: tart clone"),
        "{out:?}"
    );
}

#[tokio::test]
async fn sigint_cancels_a_pull_and_removes_its_tmp_dir_but_sigkill_keeps_it_for_resume() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let h = home();
    // 10 simulated seconds at scale 0.5: a 5 s pull, interrupted early.
    h.set_knobs(
        &Knobs::new()
            .with_latency_scale(0.5)
            .with_image("default", ImageKnob::sized(1.0, 20)),
    )
    .unwrap();
    let tmp = h.pull_tmp_dir(IMG);
    for (signal, kept) in [(Signal::SIGINT, false), (Signal::SIGKILL, true)] {
        let child = h
            .command(FT)
            .args(["pull", IMG])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let progressed = || {
            fs::read_to_string(tmp.join(".fake-progress"))
                .is_ok_and(|p| p.trim().parse::<u32>().is_ok_and(|p| p >= 20))
        };
        assert!(
            poll_until(Duration::from_secs(10), progressed).await,
            "download never progressed"
        );
        kill(Pid::from_raw(child.id().unwrap() as i32), signal).unwrap();
        let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        if kept {
            assert_eq!(out.status.code(), None, "killed by signal");
        } else {
            assert_eq!(out.status.code(), Some(1));
            assert_eq!(String::from_utf8_lossy(&out.stderr), "Error: cancelled\n");
        }
        assert_eq!(tmp.exists(), kept, "{signal:?}");
    }
    // The killed pull resumes where it stopped: no 0% line this time.
    h.set_knobs(&Knobs::new().with_image("default", ImageKnob::sized(1.0, 20)))
        .unwrap();
    let out = h.tart(FT, &["pull", IMG]).await.unwrap();
    assert_eq!(out.code, Some(0));
    assert!(
        !out.lines().contains(&"0%"),
        "resumed pull restarted from 0: {}",
        out.stdout
    );
}

#[tokio::test]
async fn concurrent_pulls_from_one_host_wait_for_the_lock() {
    let h = home();
    h.set_knobs(
        &Knobs::new()
            .with_latency_scale(0.05)
            .with_image("default", ImageKnob::sized(1.0, 20)),
    )
    .unwrap();
    let first = h
        .command(FT)
        .args(["pull", "ghcr.io/x/one:1"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        poll_until(Duration::from_secs(10), || h
            .pull_tmp_dir("ghcr.io/x/one:1")
            .exists())
        .await
    );
    let second = h.tart(FT, &["pull", "ghcr.io/x/two:1"]).await.unwrap();
    assert_eq!(second.code, Some(0));
    assert_eq!(
        &second.lines()[..3],
        [
            "pulling ghcr.io/x/two:1...",
            "pulling manifest...",
            "waiting for lock..."
        ]
    );
    let first = tokio::time::timeout(Duration::from_secs(10), first.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(first.status.success());
    // A pull from another host does not wait.
    let other = h.tart(FT, &["pull", "quay.io/x/three:1"]).await.unwrap();
    assert!(!other.stdout.contains("waiting for lock..."));
}

#[tokio::test]
async fn cloning_a_suspended_vm_copies_its_snapshot_and_keeps_its_mac() {
    let h = home();
    h.create_vm("src").unwrap();
    fs::write(h.vm_dir("src").join("state.vzvmsave"), b"snap").unwrap();
    assert_eq!(
        h.tart(FT, &["clone", "src", "copy"]).await.unwrap().code,
        Some(0)
    );
    assert!(h.vm_dir("copy").join("state.vzvmsave").is_file());
    assert_eq!(
        h.vm_mac("copy"),
        h.vm_mac("src"),
        "a suspended source keeps its MAC"
    );
    let get = h
        .tart(FT, &["get", "copy", "--format", "json"])
        .await
        .unwrap();
    assert_eq!(parse_json(&get.stdout)["State"], "suspended");
}
