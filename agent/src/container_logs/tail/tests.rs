use super::*;

fn files(dir: &std::path::Path, contents: &[&str]) -> Vec<PathBuf> {
    contents
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let p = dir.join(format!("f{i}"));
            std::fs::write(&p, c).unwrap();
            p
        })
        .collect()
}

#[test]
fn tail_counts_lines_back_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let fs = files(dir.path(), &["a\nb\n", "c\nd\ne\n"]);
    // (n, expected (file, offset)).
    let cases = [
        (0, (1, 6)),
        (1, (1, 4)),
        (3, (1, 0)),
        (4, (0, 2)),
        (5, (0, 0)),
        (50, (0, 0)),
    ];
    for (n, want) in cases {
        assert_eq!(tail_start(&fs, n).unwrap(), want, "tail {n}");
    }
}

#[test]
fn an_unfinished_last_line_is_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let fs = files(dir.path(), &["a\nb\nunfinish"]);
    assert_eq!(tail_start(&fs, 1).unwrap(), (0, 2));
    assert_eq!(tail_start(&fs, 0).unwrap(), (0, 4));
}

#[test]
fn tail_finds_lines_beyond_one_block() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("{}\n", "x".repeat(999));
    let body = line.repeat(200);
    let fs = files(dir.path(), &[&body]);
    assert_eq!(tail_start(&fs, 150).unwrap(), (0, 50 * 1000));
}

#[test]
fn a_vanished_file_counts_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let mut fs = files(dir.path(), &["a\n"]);
    fs.push(dir.path().join("gone"));
    assert_eq!(tail_start(&fs, 1).unwrap(), (0, 0));
}
