use std::sync::Mutex;

use super::*;

/// An OS that records what it is asked; `fail` names a directory it cannot watch, and two
/// paths in `same` are one directory (one key), as inotify answers for a linked path.
#[derive(Default)]
struct FakeOs {
    log: Mutex<Vec<String>>,
    fail: Option<PathBuf>,
    same: Option<(PathBuf, PathBuf)>,
}

impl FakeOs {
    fn key_of(&self, dir: &Path) -> DirKey {
        let dir = match &self.same {
            Some((a, b)) if dir == b => a.as_path(),
            _ => dir,
        };
        dir.as_os_str().len() as DirKey
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl Os for FakeOs {
    fn watch_dir(&self, dir: &Path) -> io::Result<DirKey> {
        if self.fail.as_deref() == Some(dir) {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        self.log
            .lock()
            .unwrap()
            .push(format!("watch {}", dir.display()));
        Ok(self.key_of(dir))
    }

    fn unwatch_dir(&self, key: DirKey) {
        self.log.lock().unwrap().push(format!("unwatch {key}"));
    }

    fn follow(&self, key: DirKey, _dir: &Path, names: &[OsString]) {
        let names: Vec<_> = names.iter().map(|n| n.to_string_lossy()).collect();
        self.log
            .lock()
            .unwrap()
            .push(format!("follow {key} {}", names.join(",")));
    }
}

struct Waiter {
    notify: Arc<Notify>,
    alive: Arc<AtomicBool>,
}

impl Waiter {
    fn new() -> Self {
        Self {
            notify: Arc::new(Notify::new()),
            alive: Arc::new(AtomicBool::new(true)),
        }
    }

    fn add(&self, r: &mut Registry, os: &FakeOs, files: &[&str]) -> io::Result<Entry> {
        let files: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
        r.add(os, &files, &self.notify, &self.alive)
    }

    /// Whether a wake is pending (and take it).
    fn woken(&self) -> bool {
        use futures::FutureExt;
        self.notify.notified().now_or_never().is_some()
    }
}

fn name(s: &str) -> OsString {
    OsString::from(s)
}

#[test]
fn a_write_wakes_the_waiters_that_follow_that_file_and_entries_wake_every_waiter_of_the_dir() {
    let (os, mut r) = (FakeOs::default(), Registry::default());
    let (a, b) = (Waiter::new(), Waiter::new());
    a.add(&mut r, &os, &["/s/stdout", "/s/stderr", "/logs/vm.log"])
        .unwrap();
    b.add(&mut r, &os, &["/s/exit_code"]).unwrap();
    let s = os.key_of(Path::new("/s"));
    let logs = os.key_of(Path::new("/logs"));

    r.dispatch(&Event::Content(s, name("stderr")));
    assert_eq!((a.woken(), b.woken()), (true, false));
    r.dispatch(&Event::Content(s, name("vitals")));
    assert_eq!((a.woken(), b.woken()), (false, false));
    r.dispatch(&Event::Content(logs, name("vm.log")));
    assert_eq!((a.woken(), b.woken()), (true, false));
    r.dispatch(&Event::Entries(s));
    assert_eq!((a.woken(), b.woken()), (true, true));
    r.dispatch(&Event::Overflow);
    assert_eq!((a.woken(), b.woken()), (true, true));
    r.dispatch(&Event::Content(s + 100, name("stdout")));
    assert_eq!((a.woken(), b.woken()), (false, false), "another directory");
}

#[test]
fn a_directory_is_watched_once_and_released_with_its_last_waiter() {
    let (os, mut r) = (FakeOs::default(), Registry::default());
    let (a, b) = (Waiter::new(), Waiter::new());
    let ea = a.add(&mut r, &os, &["/d/0.log"]).unwrap();
    let eb = b.add(&mut r, &os, &["/d/0.log", "/d/1.log"]).unwrap();
    let k = os.key_of(Path::new("/d"));
    assert_eq!(
        os.take(),
        [
            "watch /d".to_owned(),
            format!("follow {k} 0.log"),
            format!("follow {k} 0.log,1.log")
        ]
    );
    assert_eq!(r.dirs(), 1);
    r.remove(&os, &eb);
    assert_eq!(os.take(), [format!("follow {k} 0.log")]);
    r.remove(&os, &ea);
    assert_eq!(os.take(), [format!("unwatch {k}")]);
    assert_eq!(r.dirs(), 0);
    r.remove(&os, &ea);
    assert!(os.take().is_empty(), "removing twice does nothing");
}

#[test]
fn two_paths_of_one_directory_share_its_watch() {
    let os = FakeOs {
        same: Some(("/real".into(), "/link".into())),
        ..FakeOs::default()
    };
    let mut r = Registry::default();
    let (a, b) = (Waiter::new(), Waiter::new());
    let ea = a.add(&mut r, &os, &["/real/x"]).unwrap();
    let eb = b.add(&mut r, &os, &["/link/x"]).unwrap();
    assert_eq!(r.dirs(), 1);
    r.dispatch(&Event::Content(os.key_of(Path::new("/real")), name("x")));
    assert_eq!((a.woken(), b.woken()), (true, true));
    r.remove(&os, &ea);
    r.remove(&os, &eb);
    assert_eq!(r.dirs(), 0);
    assert_eq!(os.take().last().unwrap(), &format!("unwatch {}", 5));
}

#[test]
fn a_waiter_whose_directory_cannot_be_watched_leaves_nothing_behind() {
    let os = FakeOs {
        fail: Some("/missing".into()),
        ..FakeOs::default()
    };
    let mut r = Registry::default();
    let a = Waiter::new();
    assert!(a.add(&mut r, &os, &["/ok/f", "/missing/f"]).is_err());
    assert_eq!(r.dirs(), 0);
    assert_eq!(
        os.take().last().unwrap(),
        &format!("unwatch {}", os.key_of(Path::new("/ok")))
    );
}

#[test]
fn a_gone_directory_wakes_its_waiters_as_unwatched_and_is_not_unwatched_again() {
    let (os, mut r) = (FakeOs::default(), Registry::default());
    let a = Waiter::new();
    let ea = a.add(&mut r, &os, &["/d/0.log"]).unwrap();
    os.take();
    r.dispatch(&Event::Gone(os.key_of(Path::new("/d"))));
    assert!(a.woken());
    assert!(!a.alive.load(Ordering::Relaxed));
    r.remove(&os, &ea);
    assert!(os.take().is_empty(), "the OS dropped the watch itself");
}
