use std::time::{Duration, Instant};

use super::*;
use crate::container_logs::files;
use crate::container_logs::testing::append;
use crate::container_logs::wake::pace::Periods;
use crate::guest_file::Refused;

const WAIT: Duration = Duration::from_secs(5);

struct Rig {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    status: PathBuf,
    tart_log: PathBuf,
    /// The OS's watch with periods no test waits for: each change must be seen through it.
    watch: LogWatch,
}

fn rig() -> Rig {
    let tmp = tempfile::tempdir().unwrap();
    let status = tmp.path().join("guest/vm/status");
    std::fs::create_dir_all(&status).unwrap();
    Rig {
        root: tmp.path().join("pods"),
        tart_log: tmp.path().join("vm.log"),
        status,
        _tmp: tmp,
        watch: LogWatch::os_for_tests(Periods::never()),
    }
}

fn pod() -> PodLogId {
    PodLogId {
        namespace: "ns".into(),
        name: "p".into(),
        uid: "u1".into(),
    }
}

impl Rig {
    fn spec(&self, restart: u32) -> CollectorSpec {
        CollectorSpec::for_vm(
            self.root.clone(),
            pod(),
            "c".into(),
            restart,
            &self.status,
            self.tart_log.clone(),
            self.watch.clone(),
        )
    }

    fn dir(&self) -> PathBuf {
        pod().container_dir(&self.root, "c").unwrap()
    }

    /// `(stream, tag, content)` of every record of run `restart`, rotated files first.
    fn records(&self, restart: u32) -> Vec<String> {
        let runs = files::list(&self.dir()).unwrap();
        let mut paths = runs
            .get(&restart)
            .map(|r| r.rotated.clone())
            .unwrap_or_default();
        paths.push(self.dir().join(files::current_name(restart)));
        let mut out = Vec::new();
        for p in paths {
            let Ok(body) = std::fs::read(p) else { continue };
            for l in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let r = cri::parse(l).unwrap();
                out.push(format!(
                    "{} {} {}",
                    r.stream.as_str(),
                    r.tag.as_str(),
                    String::from_utf8_lossy(r.content)
                ));
            }
        }
        out
    }

    /// Poll until run `restart` holds `n` records.
    async fn wait_for(&self, restart: u32, n: usize) -> Vec<String> {
        self.wait_within(restart, n, WAIT).await
    }

    /// Poll until run `restart` holds `n` records; fail after `within` (of the runtime's
    /// clock, which a paused test advances only while everything waits).
    async fn wait_within(&self, restart: u32, n: usize, within: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let got = self.records(restart);
            if got.len() >= n {
                return got;
            }
            assert!(tokio::time::Instant::now() < deadline, "only {got:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[tokio::test]
async fn guest_output_and_tagged_tart_output_become_one_log() {
    let r = rig();
    append(&r.tart_log, "an earlier run\n");
    let h = spawn(r.spec(0));
    append(&r.status.join("stdout"), "hello\n");
    append(&r.status.join("stderr"), "oops\n");
    append(&r.tart_log, "vm started\n");
    let mut got = r.wait_for(0, 3).await;
    got.sort();
    assert_eq!(
        got,
        [
            "stderr F [tart] vm started",
            "stderr F oops",
            "stdout F hello"
        ]
    );
    assert!(!r.dir().join("0.ended").exists(), "the run is not over");
    append(&r.status.join("stdout"), "no newline");
    h.finish().await;
    assert_eq!(r.records(0).last().unwrap(), "stdout F no newline");
    assert!(r.dir().join("0.ended").exists());
}

#[tokio::test]
async fn a_truncated_source_is_read_from_its_start() {
    let r = rig();
    let h = spawn(r.spec(0));
    let out = r.status.join("stdout");
    append(&out, "one\ntwo\n");
    r.wait_for(0, 2).await;
    std::fs::write(&out, "3\n").unwrap();
    let got = r.wait_for(0, 3).await;
    assert_eq!(got, ["stdout F one", "stdout F two", "stdout F 3"]);
    drop(h);
}

#[tokio::test]
async fn dropping_the_handle_stops_after_a_last_read() {
    let r = rig();
    let h = spawn(r.spec(0));
    append(&r.status.join("stdout"), "before\n");
    drop(h);
    let deadline = Instant::now() + WAIT;
    while !r.dir().join("0.ended").exists() {
        assert!(Instant::now() < deadline, "never marked ended");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(r.records(0), ["stdout F before"]);
}

#[tokio::test]
async fn the_log_rotates_by_size_and_keeps_max_files() {
    let r = rig();
    let mut spec = r.spec(0);
    spec.rotation = Rotation {
        max_bytes: 200,
        max_files: 3,
    };
    let h = spawn(spec);
    // 40 records of 45 bytes: about 4 a file, far more files than are kept.
    for i in 0..40 {
        append(&r.status.join("stdout"), &format!("line {i:02}\n"));
    }
    h.finish().await;
    let runs = files::list(&r.dir()).unwrap();
    assert_eq!(runs[&0].rotated.len(), 2, "{runs:?}");
    let got = r.records(0);
    assert_eq!(got.last().unwrap(), "stdout F line 39");
    assert!(got.len() < 40, "the oldest files are gone");
    for p in runs[&0].rotated.iter() {
        assert!(std::fs::metadata(p).unwrap().len() <= 200);
    }
}

#[tokio::test]
async fn a_new_run_keeps_the_previous_and_drops_older_ones() {
    let r = rig();
    for restart in 0..3 {
        let out = r.status.join("stdout");
        std::fs::write(&out, "").unwrap();
        let h = spawn(r.spec(restart));
        append(&out, &format!("run {restart}\n"));
        h.finish().await;
    }
    let runs = files::list(&r.dir()).unwrap();
    assert_eq!(runs.keys().copied().collect::<Vec<_>>(), [1, 2]);
    assert_eq!(r.records(1), ["stdout F run 1"]);
    assert_eq!(r.records(2), ["stdout F run 2"]);
}

#[tokio::test]
async fn a_collector_started_again_for_a_run_resumes_where_the_last_stopped() {
    let r = rig();
    let out = r.status.join("stdout");
    let h = spawn(r.spec(0));
    append(&out, "a\nunfin");
    r.wait_for(0, 1).await;
    // Stop it as an agent crash would: no last read, no end mark.
    h.task.abort();
    let offsets = r.dir().join(files::offsets_name(0));
    let deadline = Instant::now() + WAIT;
    while checkpoint::load(&offsets).first().map(|e| e.2) != Some(2) {
        assert!(
            Instant::now() < deadline,
            "no checkpoint after the first line"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    append(&out, "ished\n");
    spawn(r.spec(0)).finish().await;
    assert_eq!(r.records(0), ["stdout F a", "stdout F unfinished"]);
}

/// The faults a collector reported: the file's name and the fault.
type Seen = Arc<std::sync::Mutex<Vec<(String, Fault)>>>;

/// A spec whose faults go to the returned list.
fn reporting(mut spec: CollectorSpec) -> (CollectorSpec, Seen) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let to = seen.clone();
    spec.report = Some(FaultReport(Arc::new(move |src: &Source, fault| {
        let file = src.path.file_name().unwrap().to_string_lossy().into_owned();
        to.lock().unwrap().push((file, fault));
    })));
    (spec, seen)
}

#[tokio::test]
async fn a_link_or_fifo_in_place_of_the_output_is_refused_once_and_never_read() {
    let r = rig();
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("secret"), "marker-9c1e\n").unwrap();
    let (spec, seen) = reporting(r.spec(0));
    let h = spawn(spec);
    append(&r.status.join("stdout"), "mine\n");
    r.wait_for(0, 1).await;
    std::fs::remove_file(r.status.join("stdout")).unwrap();
    std::os::unix::fs::symlink(host.path().join("secret"), r.status.join("stdout")).unwrap();
    nix::unistd::mkfifo(&r.status.join("stderr"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let deadline = Instant::now() + WAIT;
    while seen.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "{:?}", seen.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::timeout(WAIT, h.finish())
        .await
        .expect("the collector hung");
    assert_eq!(r.records(0), ["stdout F mine"]);
    let mut got = seen.lock().unwrap().clone();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got,
        [
            ("stderr".to_owned(), Fault::Refused(Refused::Fifo)),
            ("stdout".to_owned(), Fault::Refused(Refused::Link))
        ]
    );
}

#[tokio::test]
async fn a_backlog_larger_than_the_log_keeps_is_skipped_not_copied() {
    let r = rig();
    let (mut spec, seen) = reporting(r.spec(0));
    spec.rotation = Rotation {
        max_bytes: 64 << 10,
        max_files: 2,
    };
    let out = r.status.join("stdout");
    append(&out, "before\n");
    // 1 GiB at once, sparse: far more than the 128 KiB the log keeps.
    let f = std::fs::OpenOptions::new().append(true).open(&out).unwrap();
    f.set_len(1 << 30).unwrap();
    append(&out, "\nafter\n");
    spawn(spec).finish().await;
    let got = r.records(0);
    assert_eq!(got.last().unwrap(), "stdout F after");
    let total: u64 = std::fs::read_dir(r.dir())
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(total <= 2 * (64 << 10) + 1024, "{total} bytes kept");
    let skipped = (1u64 << 30) + 7 - 2 * (64 << 10);
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [("stdout".to_owned(), Fault::Skipped(skipped))]
    );
}

#[tokio::test(start_paused = true)]
async fn a_write_is_collected_when_the_watch_reports_it_not_at_the_fallback() {
    let r = rig();
    let watch = LogWatch::manual(Periods {
        fallback: Duration::from_secs(60),
        poll: Duration::from_secs(60),
    });
    let spec = CollectorSpec {
        watch: watch.clone(),
        ..r.spec(0)
    };
    let h = spawn(spec);
    // The first step has run (nothing to read) once the collector waits.
    tokio::time::sleep(Duration::from_millis(100)).await;
    append(&r.status.join("stdout"), "now\n");
    watch.fire();
    let got = r.wait_within(0, 1, Duration::from_secs(1)).await;
    assert_eq!(got, ["stdout F now"]);
    drop(h);
}

#[tokio::test(start_paused = true)]
async fn writes_the_watch_misses_are_read_at_the_fallback_then_by_polling() {
    let r = rig();
    let spec = CollectorSpec {
        // Nothing is ever reported.
        watch: LogWatch::manual(Periods {
            fallback: Duration::from_secs(10),
            poll: Duration::from_millis(25),
        }),
        ..r.spec(0)
    };
    let h = spawn(spec);
    // The first step has run (nothing to read) once the collector waits.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let out = r.status.join("stdout");
    for (i, line) in ["one", "two"].iter().enumerate() {
        append(&out, &format!("{line}\n"));
        r.wait_within(0, i + 1, Duration::from_secs(11)).await;
    }
    // Twice new data at the fallback and no notification: the watch misses writes.
    append(&out, "three\n");
    let got = r.wait_within(0, 3, Duration::from_millis(100)).await;
    assert_eq!(got, ["stdout F one", "stdout F two", "stdout F three"]);
    drop(h);
}
