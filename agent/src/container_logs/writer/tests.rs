use super::*;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn rec(n: usize) -> Vec<u8> {
    // One 10-byte record: 9 bytes and a newline.
    format!("{n:09}\n").into_bytes()
}

#[test]
fn cut_point_keeps_whole_records_that_fit() {
    let cases: [(&[u8], u64, usize); 5] = [
        (b"ab\ncd\n", 6, 6),
        (b"ab\ncd\n", 5, 3),
        (b"ab\ncd\n", 2, 0),
        (b"ab\ncd\n", u64::MAX, 6),
        (b"", 10, 0),
    ];
    for (batch, room, want) in cases {
        assert_eq!(cut_point(batch, room), want, "{batch:?} {room}");
    }
}

#[test]
fn a_full_file_is_rotated_and_only_max_files_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let rot = Rotation {
        max_bytes: 30,
        max_files: 3,
    };
    let mut log = RunLog::open(dir.path(), 0, rot).unwrap();
    let t = ts("2024-05-06T07:08:09Z");
    for i in 0..11 {
        let mut batch = rec(i);
        log.append(&mut batch, t).unwrap();
        assert!(batch.is_empty());
    }
    // 11 records of 10 bytes, 3 a file: 4 files written, the oldest removed.
    assert_eq!(
        names(dir.path()),
        [
            "0.log",
            "0.log.20240506-070809-1",
            "0.log.20240506-070809-2"
        ]
    );
    let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap();
    assert_eq!(read("0.log"), "000000009\n000000010\n");
    assert_eq!(
        read("0.log.20240506-070809-2"),
        "000000006\n000000007\n000000008\n"
    );
}

#[test]
fn one_batch_is_spread_over_files_at_record_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let rot = Rotation {
        max_bytes: 25,
        max_files: 10,
    };
    let mut log = RunLog::open(dir.path(), 2, rot).unwrap();
    let mut batch: Vec<u8> = (0..5).flat_map(rec).collect();
    log.append(&mut batch, ts("2024-05-06T07:08:09Z")).unwrap();
    let runs = files::list(dir.path()).unwrap();
    let run = &runs[&2];
    assert_eq!(run.rotated.len(), 2);
    for p in &run.rotated {
        assert_eq!(std::fs::metadata(p).unwrap().len(), 20, "{p:?}");
    }
    assert_eq!(std::fs::read(dir.path().join("2.log")).unwrap(), rec(4));
}

#[test]
fn a_record_larger_than_the_limit_gets_a_file_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let rot = Rotation {
        max_bytes: 5,
        max_files: 5,
    };
    let mut log = RunLog::open(dir.path(), 0, rot).unwrap();
    let mut batch = [rec(1), rec(2)].concat();
    log.append(&mut batch, ts("2024-05-06T07:08:09Z")).unwrap();
    assert_eq!(std::fs::read(dir.path().join("0.log")).unwrap(), rec(2));
    assert_eq!(files::list(dir.path()).unwrap()[&0].rotated.len(), 1);
}

#[test]
fn opening_a_run_keeps_only_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "0.log",
        "0.log.20240506-070809",
        "1.log",
        "1.ended",
        "2.log",
        "2.ended",
        "notes.txt",
    ] {
        std::fs::write(dir.path().join(name), "x\n").unwrap();
    }
    let log = RunLog::open(dir.path(), 2, Rotation::default()).unwrap();
    assert_eq!(
        names(dir.path()),
        ["1.ended", "1.log", "2.log", "notes.txt"],
        "this run is no longer ended; files this module never writes stay"
    );
    log.mark_ended().unwrap();
    assert!(dir.path().join("2.ended").exists());
}

#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let cdir = dir.path().join("ns_pod_uid/c");
    let mut log = RunLog::open(&cdir, 0, Rotation::default()).unwrap();
    log.append(&mut rec(0), ts("2024-05-06T07:08:09Z")).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cdir), 0o700);
    assert_eq!(mode(cdir.parent().unwrap()), 0o700);
    assert_eq!(mode(&cdir.join("0.log")), 0o600);
}
