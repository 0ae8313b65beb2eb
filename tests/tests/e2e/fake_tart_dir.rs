//! fake-tart's `tart run --dir` (docs/reference/tart-cli.md §2.6): each accepted form of
//! `[name:]path[:ro][,tag=TAG]` is recorded as a parsed share, every malformed value is an E3
//! usage error (exit 64) before anything runs, and what the `tart` crate builds is accepted.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tart::{DirShare, Network, RunOpts, Tart, TartCli, VmName};
use tart_kubelet_tests::fake::{FakeHome, poll_until};

const FT: &str = env!("CARGO_BIN_EXE_fake-tart");
const AUTO: &str = "com.apple.virtio-fs.automount";

fn home() -> FakeHome {
    let h = FakeHome::new().expect("temp home");
    h.create_vm("vm1").unwrap();
    h
}

/// Runs `tart run vm1 --no-graphics <dirs>`, returns the recorded shares, then stops it.
async fn recorded_shares(h: &FakeHome, dirs: &[&str]) -> Value {
    let mut cmd = h.command(FT);
    cmd.args(["run", "vm1", "--no-graphics"]);
    for d in dirs {
        cmd.args(["--dir", d]);
    }
    let child = cmd
        .current_dir(h.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = poll_until(Duration::from_secs(10), || h.run_record("vm1").is_some()).await;
    let shares = h.run_record("vm1").map(|r| r["shares"].clone());
    assert_eq!(h.tart(FT, &["stop", "vm1"]).await.unwrap().code, Some(0));
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("run did not exit")
        .unwrap();
    assert!(
        started,
        "run {dirs:?} never started: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    shares.unwrap()
}

fn share(name: Option<&str>, path: &Path, read_only: bool, tag: &str) -> Value {
    json!({"name": name, "path": path, "read_only": read_only, "tag": tag})
}

#[tokio::test]
async fn every_accepted_form_is_recorded_with_name_path_and_options() {
    let h = home();
    let rel = h.path().join("rel");
    let cases: Vec<(Vec<&str>, Value)> = vec![
        (vec!["/a"], json!([share(None, "/a".as_ref(), false, AUTO)])),
        (
            vec!["/a:ro"],
            json!([share(None, "/a".as_ref(), true, AUTO)]),
        ),
        (vec!["rel"], json!([share(None, &rel, false, AUTO)])),
        (
            vec!["control:/c:ro", "status:/s"],
            json!([
                share(Some("control"), "/c".as_ref(), true, AUTO),
                share(Some("status"), "/s".as_ref(), false, AUTO)
            ]),
        ),
        (
            vec!["n:/a:tag=t", "/b:ro,tag=u"],
            json!([
                share(Some("n"), "/a".as_ref(), false, "t"),
                share(None, "/b".as_ref(), true, "u")
            ]),
        ),
        (
            vec!["a:/a:tag=t,ro", "b:/b:tag=t"],
            json!([
                share(Some("a"), "/a".as_ref(), true, "t"),
                share(Some("b"), "/b".as_ref(), false, "t")
            ]),
        ),
    ];
    for (dirs, want) in cases {
        assert_eq!(recorded_shares(&h, &dirs).await, want, "{dirs:?}");
    }
}

#[tokio::test]
async fn malformed_values_are_usage_errors_and_nothing_runs() {
    let h = home();
    let named =
        "invalid --dir syntax: for multiple directory shares each one of them should be named";
    let cases: &[(&[&str], &str)] = &[
        (&["a:/a", "/b"], named),
        (&["/a", "/b"], named),
        (&["a:/a:tag=t", "/b:tag=t"], named),
        (
            &["a:/a", "a:/b:ro"],
            "invalid --dir syntax: duplicate directory share name \"a\"",
        ),
        (&[""], "invalid --dir syntax: empty directory share path"),
        (&["n:"], "invalid --dir syntax: empty directory share path"),
        (&[":/a"], "invalid --dir syntax: empty directory share name"),
        (&["n:/a:rw"], "invalid --dir syntax: unknown option \"rw\""),
        (&["n:/a:tag="], "invalid --dir syntax: empty mount tag"),
        (
            &["n:/a:ro:x"],
            "invalid --dir syntax: too many ':' in \"n:/a:ro:x\"",
        ),
    ];
    for (dirs, msg) in cases {
        let mut argv = vec!["run", "vm1"];
        for d in *dirs {
            argv.extend(["--dir", d]);
        }
        let out = h.tart(FT, &argv).await.unwrap();
        assert_eq!(out.code, Some(64), "{dirs:?}: {}", out.stderr);
        let root_usage = format!(
            "Error: {msg}\nUsage: tart <subcommand>\n  See 'tart --help' for more information.\n"
        );
        assert_eq!(out.stderr, root_usage, "{dirs:?}");
        assert!(h.run_record("vm1").is_none(), "{dirs:?} started a VM");
    }
}

#[tokio::test]
async fn what_the_tart_crate_builds_is_accepted_as_meant() {
    let h = home();
    let cli = TartCli::builder(h.path()).program(FT).build();
    let vm = VmName::new("vm1").unwrap();
    let dir = |name: &str, path: &str, read_only, tag: Option<&str>| DirShare {
        name: Some(name.into()),
        path: path.into(),
        read_only,
        tag: tag.map(str::to_owned),
    };
    let opts = RunOpts {
        dirs: vec![
            dir("control", "/srv/c", true, None),
            dir("status", "/srv/s", false, None),
            dir("cache", "/srv/x", true, Some("cache")),
        ],
        network: Network::Shared,
        root_disk: Default::default(),
        suspendable: false,
        log_path: h.path().join("vm1.log"),
        log_cap_bytes: 1 << 20,
        start_window: Duration::from_millis(200),
    };
    let run = cli.run(&vm, &opts).await.expect("run");
    assert!(poll_until(Duration::from_secs(10), || h.run_record("vm1").is_some()).await);
    assert_eq!(
        h.run_record("vm1").unwrap()["shares"],
        json!([
            share(Some("control"), "/srv/c".as_ref(), true, AUTO),
            share(Some("status"), "/srv/s".as_ref(), false, AUTO),
            share(Some("cache"), "/srv/x".as_ref(), true, "cache")
        ])
    );
    cli.stop(&run, Duration::from_secs(5)).await.expect("stop");
}
