use super::*;

#[test]
fn a_second_flock_on_the_same_path_is_refused_until_the_first_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("lock");
    let g = try_flock(&p).unwrap().expect("first lock");
    assert!(try_flock(&p).unwrap().is_none());
    drop(g);
    assert!(try_flock(&p).unwrap().is_some());
}

#[test]
fn gc_removes_unlocked_tmp_entries_and_keeps_locked_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    fs::create_dir(&a).unwrap();
    fs::create_dir(&b).unwrap();
    let held = try_flock(&a).unwrap().unwrap();
    gc_tmp(dir.path()).unwrap();
    assert!(a.exists());
    assert!(!b.exists());
    drop(held);
}

#[tokio::test]
async fn a_working_directory_is_made_locked_and_gc_keeps_it_until_it_is_unlocked() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let held = create_locked_dir(&work).await.unwrap();
    gc_tmp(tmp.path()).unwrap();
    assert!(work.is_dir(), "GC removed a locked working directory");
    drop(held);
    gc_tmp(tmp.path()).unwrap();
    assert!(!work.exists(), "GC kept an unlocked entry");
}

#[test]
fn a_lock_names_its_directory_only_until_the_directory_is_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    fs::create_dir(&d).unwrap();
    let f = File::open(&d).unwrap();
    assert!(names_the_same(&f, &d));
    fs::remove_dir(&d).unwrap();
    assert!(!names_the_same(&f, &d), "a deleted directory");
    fs::create_dir(&d).unwrap();
    assert!(!names_the_same(&f, &d), "a new directory of the same name");
}

/// Another command's GC running all the while never leaves a working directory deleted or
/// turned into a file under its maker: each one is a directory that takes a file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_directories_survive_a_gc_running_beside_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gc = {
        let (root, stop) = (root.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = gc_tmp(&root);
            }
        })
    };
    for i in 0..2000 {
        let work = root.join(format!("w{i}"));
        let held = create_locked_dir(&work).await.unwrap();
        fs::write(work.join("disk.img"), b"x").unwrap_or_else(|e| panic!("w{i}: {e}"));
        drop(held);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    gc.join().unwrap();
}
