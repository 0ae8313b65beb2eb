//! What the container logs' tests share.

use std::io::Write;
use std::path::Path;

/// Append `data` to the file at `path`, creating it: as the guest writes its output.
pub(crate) fn append(path: &Path, data: &str) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(data.as_bytes())
        .unwrap();
}
