//! fake-tart's auto-prune (docs/reference/tart-cli.md §4): a pull or clone that needs more room
//! than the volume has deletes OCI cache entries, least recently accessed first, never the clone's
//! source and never a local VM, nothing when the whole cache cannot cover it, and nothing at all
//! while `TART_NO_AUTO_PRUNE` is present.

use std::fs::{self, File, FileTimes};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use tart_kubelet_tests::fake::{FakeHome, ImageKnob, Knobs, TART_CALL_DEADLINE, TartOutput};

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");
const A: &str = "ghcr.io/acme/a:1";
const B: &str = "ghcr.io/acme/b:1";
const C: &str = "ghcr.io/acme/c:1";
const BIG: &str = "ghcr.io/acme/big:1";
const SMALL: &str = "ghcr.io/acme/small:1";

fn knobs(available_gb: Option<f64>) -> Knobs {
    let k = Knobs::new()
        .with_image("default", ImageKnob::sized(0.01, 20))
        .with_image(BIG, ImageKnob::sized(0.01, 50))
        .with_image(SMALL, ImageKnob::sized(0.01, 10));
    match available_gb {
        Some(gb) => k.with_volume_available_gb(gb),
        None => k,
    }
}

/// Runs fake-tart with `TART_NO_AUTO_PRUNE` removed (`None`) or set to the given value.
async fn tart(h: &FakeHome, args: &[&str], no_prune: Option<&str>) -> TartOutput {
    let mut cmd = h.command(FT);
    match no_prune {
        Some(v) => cmd.env("TART_NO_AUTO_PRUNE", v),
        None => cmd.env_remove("TART_NO_AUTO_PRUNE"),
    };
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = tokio::time::timeout(TART_CALL_DEADLINE, cmd.spawn().unwrap().wait_with_output())
        .await
        .expect("fake-tart timed out")
        .unwrap();
    let out = TartOutput {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_eq!(out.code, Some(0), "{args:?}: {out:?}");
    out
}

/// The tag link of `image` (`ghcr.io/acme/<name>:1`) in the cache.
fn tag(h: &FakeHome, image: &str) -> PathBuf {
    let (repo, t) = image.rsplit_once(':').unwrap();
    h.path().join("cache/OCIs").join(repo).join(t)
}

/// Whether `image` is cached: its tag resolves to a digest directory.
fn cached(h: &FakeHome, image: &str) -> bool {
    tag(h, image).join("config.json").is_file()
}

/// Sets the access time of `image`'s digest directory to `age` ago.
fn accessed_ago(h: &FakeHome, image: &str, age: Duration) {
    let dir = fs::canonicalize(tag(h, image)).unwrap();
    let when = SystemTime::now() - age;
    File::open(dir)
        .unwrap()
        .set_times(FileTimes::new().set_accessed(when))
        .unwrap();
}

fn digest_dirs(h: &FakeHome, repo: &str) -> usize {
    fs::read_dir(h.path().join("cache/OCIs/ghcr.io/acme").join(repo))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("sha256:"))
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn a_pull_that_needs_room_evicts_the_least_recently_accessed_entry_and_prints_nothing() {
    let h = FakeHome::new().unwrap();
    h.set_knobs(&knobs(Some(25.0))).unwrap();
    tart(&h, &["pull", A], None).await;
    tart(&h, &["pull", B], None).await;
    assert!(
        cached(&h, A) && cached(&h, B),
        "room for both: nothing pruned"
    );
    accessed_ago(&h, A, Duration::from_secs(100));
    accessed_ago(&h, B, Duration::from_secs(200));

    // 20 GB + 128 MiB needed, 10 GB free: one 20 GB entry covers it, the older one (B).
    h.set_knobs(&knobs(Some(10.0))).unwrap();
    let out = tart(&h, &["pull", C], None).await;
    assert!(!cached(&h, B), "the least recently accessed entry stayed");
    assert!(
        fs::symlink_metadata(tag(&h, B)).is_err(),
        "B's tag link stayed"
    );
    assert_eq!(digest_dirs(&h, "b"), 0);
    assert!(cached(&h, A), "more than needed was pruned");
    assert!(cached(&h, C));
    let pulled = tart(&h, &["pull", A], None).await;
    assert!(
        pulled.stdout.contains("already cached"),
        "A is still cached: {pulled:?}"
    );
    // Auto-prune is silent: the pull prints what a pull without pruning prints.
    let lines = out.lines();
    assert_eq!(
        lines[..2],
        [&format!("pulling {C}...")[..], "pulling manifest..."]
    );
    assert_eq!(lines[2], "pulling disk (0.0 GB compressed)...");
    assert_eq!(*lines.last().unwrap(), "pulling NVRAM...");
    assert!(out.stderr.is_empty(), "{out:?}");
}

#[tokio::test]
async fn two_pulls_on_a_full_volume_evict_the_first_image_unless_the_variable_is_present() {
    // The second image needs 10 GB + 128 MiB, which the first (20 GB) covers.
    // (TART_NO_AUTO_PRUNE, whether the first image survives the second pull)
    for (var, kept) in [(None, false), (Some(""), true), (Some("1"), true)] {
        let h = FakeHome::new().unwrap();
        h.set_knobs(&knobs(Some(0.0))).unwrap();
        tart(&h, &["pull", A], var).await;
        tart(&h, &["pull", SMALL], var).await;
        assert_eq!(cached(&h, A), kept, "TART_NO_AUTO_PRUNE={var:?}");
        assert!(cached(&h, SMALL), "TART_NO_AUTO_PRUNE={var:?}");
    }
}

#[tokio::test]
async fn a_clone_never_evicts_its_source_nor_a_local_vm() {
    let h = FakeHome::new().unwrap();
    h.set_knobs(&knobs(None)).unwrap();
    for image in [A, B, BIG] {
        tart(&h, &["pull", image], None).await;
    }
    h.create_vm("local").unwrap();
    accessed_ago(&h, A, Duration::from_secs(300));
    accessed_ago(&h, B, Duration::from_secs(200));

    // The clone reserves BIG's unallocated ~50 GB on a full volume: A and B (40 GB) do not
    // cover it, and the next entry in line is BIG itself, the initiator, which stays.
    h.set_knobs(&knobs(Some(0.0))).unwrap();
    tart(&h, &["clone", BIG, "vm"], None).await;
    assert!(h.vm_exists("vm"));
    assert!(cached(&h, BIG), "the clone's source was evicted");
    assert!(!cached(&h, A) && !cached(&h, B), "the other entries stayed");
    assert!(h.vm_exists("local"), "a local VM was pruned");

    // --prune-limit 0 reserves nothing: the next clone deletes nothing.
    tart(&h, &["pull", C], Some("")).await;
    tart(&h, &["clone", BIG, "vm2", "--prune-limit", "0"], None).await;
    assert!(cached(&h, C), "a clone with --prune-limit 0 pruned");
    tart(&h, &["clone", BIG, "vm3"], None).await;
    assert!(!cached(&h, C), "without the limit the clone prunes");
}

#[tokio::test]
async fn a_cache_too_small_to_cover_the_shortfall_is_left_whole() {
    let h = FakeHome::new().unwrap();
    h.set_knobs(&knobs(Some(0.0))).unwrap();
    tart(&h, &["pull", A], Some("")).await;
    // 50 GB + 128 MiB needed, 0 free, 20 GB cached: nothing is deleted and the pull goes on.
    tart(&h, &["pull", BIG], None).await;
    assert!(cached(&h, A), "a cache too small to help was pruned");
    assert!(cached(&h, BIG));
}
