use std::os::unix::fs::symlink;
use std::os::unix::net::UnixListener;
use std::time::Duration;

use super::*;

const MARKER: &[u8] = b"host secret marker";

fn refused(r: Result<impl std::fmt::Debug, GuestFileError>) -> Option<Refused> {
    match r {
        Err(GuestFileError::Refused(k)) => Some(k),
        _ => None,
    }
}

#[test]
fn a_regular_file_is_read_within_its_bounds() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("stdout");
    std::fs::write(&p, b"0123456789").unwrap();
    assert_eq!(read_head(&p, 4).unwrap(), b"0123");
    assert_eq!(read_last(&p, 3).unwrap(), (b"789".to_vec(), true));
    assert_eq!(read_last(&p, 30).unwrap(), (b"0123456789".to_vec(), false));
    let f = open_in(d.path(), "stdout").unwrap();
    assert_eq!(f.len, 10);
    assert!(matches!(
        read_head(&d.path().join("absent"), 4),
        Err(GuestFileError::Missing)
    ));
}

#[test]
fn what_is_not_a_regular_file_is_refused_and_nothing_blocks() {
    let d = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret");
    std::fs::write(&secret, MARKER).unwrap();
    symlink(&secret, d.path().join("link")).unwrap();
    symlink(host.path(), d.path().join("dirlink")).unwrap();
    nix::unistd::mkfifo(&d.path().join("fifo"), Mode::S_IRUSR | Mode::S_IWUSR).unwrap();
    std::fs::create_dir(d.path().join("dir")).unwrap();
    let _sock = UnixListener::bind(d.path().join("sock")).unwrap();
    let cases = [
        ("link", Refused::Link),
        ("dirlink", Refused::Link),
        ("fifo", Refused::Fifo),
        ("dir", Refused::Directory),
        ("sock", Refused::Socket),
    ];
    // A FIFO with no writer would block a plain open for ever: run the reads on a thread
    // with a deadline.
    let dir = d.path().to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let got: Vec<_> = cases
            .iter()
            .map(|(name, _)| {
                let p = dir.join(name);
                (
                    refused(read_head(&p, 1 << 20)),
                    refused(read_last(&p, 1 << 20)),
                )
            })
            .collect();
        let _ = tx.send(got);
    });
    let got = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("a read blocked");
    for ((name, want), (head, last)) in cases.iter().zip(got) {
        assert_eq!((head, last), (Some(*want), Some(*want)), "{name}");
    }
    assert!(matches!(
        read_head(Path::new("/dev/null"), 1),
        Err(GuestFileError::Refused(Refused::Device))
    ));
}

#[test]
fn a_link_in_place_of_the_directory_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("stdout"), MARKER).unwrap();
    symlink(host.path(), d.path().join("status")).unwrap();
    assert_eq!(
        refused(read_head(&d.path().join("status/stdout"), 100)),
        Some(Refused::Link)
    );
    assert!(matches!(
        open_in(d.path(), "../x"),
        Err(GuestFileError::Io(_))
    ));
}
