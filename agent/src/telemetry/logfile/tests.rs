use super::*;
use tracing_subscriber::fmt::MakeWriter as _;

fn line(f: &RotatingFile, s: &str) {
    f.make_writer().write_all(s.as_bytes()).unwrap();
}

#[test]
fn file_rotates_when_the_next_line_would_pass_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("logs/agent.log");
    let f = RotatingFile::open(&p, 20, 3).unwrap();
    line(&f, "0123456789\n"); // 11 bytes
    line(&f, "abcdefghi\n"); // 21 > 20: rotate first
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "abcdefghi\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("logs/agent.log.1")).unwrap(),
        "0123456789\n"
    );
}

#[test]
fn only_keep_rotated_files_survive() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.log");
    let f = RotatingFile::open(&p, 5, 2).unwrap();
    for i in 0..6 {
        line(&f, &format!("line{i}\n"));
    }
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "line5\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.log.1")).unwrap(),
        "line4\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.log.2")).unwrap(),
        "line3\n"
    );
    assert!(!dir.path().join("a.log.3").exists());
}

#[test]
fn a_line_longer_than_the_limit_is_written_whole() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.log");
    let f = RotatingFile::open(&p, 4, 1).unwrap();
    line(&f, "a very long line\n");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "a very long line\n");
}

#[test]
fn reopening_appends_and_counts_the_existing_size() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.log");
    std::fs::write(&p, "old-content\n").unwrap(); // 12 bytes
    let f = RotatingFile::open(&p, 16, 1).unwrap();
    line(&f, "new\n"); // 16: fits
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "old-content\nnew\n");
    line(&f, "x\n"); // 18 > 16
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "x\n");
}

#[test]
fn a_file_renamed_away_is_reopened_at_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.log");
    let f = RotatingFile::open(&p, 1 << 20, 1).unwrap();
    line(&f, "before\n");
    std::fs::rename(&p, dir.path().join("a.log.0")).unwrap();
    // Force the periodic check instead of waiting a second.
    f.lock().checked = Instant::now() - REOPEN_CHECK;
    line(&f, "after\n");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "after\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.log.0")).unwrap(),
        "before\n"
    );
}

#[test]
fn tracing_events_land_in_the_file() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.log");
    let f = RotatingFile::open(&p, 1 << 20, 1).unwrap();
    let sub = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .json()
            .with_ansi(false)
            .with_writer(f),
    );
    tracing::subscriber::with_default(sub, || {
        tracing::info!(vm = "tkl-1", "vm started");
    });
    let text = std::fs::read_to_string(&p).unwrap();
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["fields"]["message"], "vm started");
    assert_eq!(v["fields"]["vm"], "tkl-1");
}
