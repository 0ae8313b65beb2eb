//! Tests of [`super::scan`] on a cache laid out as docs/reference/tart-cli.md §1.1 describes.

use std::{fs, os::unix::fs::symlink, path::Path};

use super::*;

fn digest(c: char) -> String {
    format!("sha256:{}", c.to_string().repeat(64))
}

fn image_dir(repo_dir: &Path, d: &str, disk_bytes: usize) -> PathBuf {
    let dir = repo_dir.join(d);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("config.json"), b"{}").unwrap();
    fs::write(dir.join("disk.img"), vec![7u8; disk_bytes]).unwrap();
    dir
}

#[test]
fn an_absent_cache_is_empty() {
    let home = tempfile::tempdir().unwrap();
    assert_eq!(scan(home.path()).unwrap(), Vec::new());
}

#[test]
fn digests_carry_their_tags_sizes_and_decoded_hosts() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("cache/OCIs/localhost%3A5000/acme/macos");
    let a = image_dir(&repo, &digest('a'), 64 * 1024);
    image_dir(&repo, &digest('b'), 4096);
    fs::write(repo.join(digest('b')).join(".explicitly-pulled"), b"").unwrap();
    symlink(&a, repo.join("latest")).unwrap();
    symlink(&a, repo.join("15.3")).unwrap();
    // A tag whose digest is gone and a link to something that is not a digest are not images.
    symlink(repo.join(digest('c')), repo.join("stale")).unwrap();
    symlink(home.path(), repo.join("odd")).unwrap();

    let found = scan(home.path()).unwrap();
    assert_eq!(found.len(), 2, "{found:#?}");
    let first = &found[0];
    assert_eq!(first.host, "localhost:5000");
    assert_eq!(first.repository, "acme/macos");
    assert_eq!(first.digest, digest('a'));
    assert_eq!(first.tags, ["15.3", "latest"]);
    assert_eq!(
        first.tag_names(),
        [
            "localhost:5000/acme/macos:15.3",
            "localhost:5000/acme/macos:latest"
        ]
    );
    assert_eq!(
        first.digest_name(),
        format!("localhost:5000/acme/macos@{}", digest('a'))
    );
    assert!(
        first.bytes >= 64 * 1024,
        "allocated bytes count the disk: {}",
        first.bytes
    );
    assert!(!first.explicitly_pulled);
    let second = &found[1];
    assert!(second.tags.is_empty());
    assert!(second.explicitly_pulled);
}

#[test]
fn a_sparse_disk_counts_what_it_uses_not_its_length() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("cache/OCIs/ghcr.io/acme/macos");
    let dir = image_dir(&repo, &digest('d'), 0);
    let f = fs::OpenOptions::new()
        .write(true)
        .open(dir.join("disk.img"))
        .unwrap();
    f.set_len(10 * 1024 * 1024 * 1024).unwrap();
    let found = scan(home.path()).unwrap();
    assert!(
        found[0].bytes < 1024 * 1024,
        "a 10 GiB hole is not 10 GiB on disk: {}",
        found[0].bytes
    );
}
