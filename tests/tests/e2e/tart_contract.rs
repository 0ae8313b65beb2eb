//! The `Tart` contract: the same assertions against `MemTart`, against `TartCli` + fake-tart,
//! and (ignored; `TART_CONTRACT_REAL=1` on macOS) against the real `tart`.

use crate::tart_support;

use std::time::Duration;

use tart::{
    ErrorKind, ExitReason, IpResolver, RunOpts, RunningVm, SetOpts, Source, StopOutcome, Tart,
    VmState, testing::MemTart,
};
use tart_support::{Home, vm};
use tokio::time::timeout;

const IMAGE: &str = "ghcr.io/cirruslabs/macos-tahoe-base:latest";

/// Every await is bounded: a hang is a failure, not a stuck CI job. Real pulls get an hour.
async fn t<F: std::future::Future>(f: F) -> F::Output {
    let limit = if std::env::var_os("TART_CONTRACT_REAL").is_some() {
        Duration::from_secs(3600)
    } else {
        Duration::from_secs(60)
    };
    timeout(limit, f).await.expect("operation hung")
}

/// `unwrap_err` without requiring `Debug` of the success type.
fn expect_err<V>(r: tart::Result<V>) -> tart::Error {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

/// The contract. `prefix` keeps VM names unique; `run_opts` gives a log path per VM.
async fn contract<T: Tart>(
    tart: &T,
    prefix: &str,
    image: &str,
    run_opts: impl Fn(&tart::VmName) -> RunOpts,
) {
    let name = vm(&format!("{prefix}-vm"));
    let missing = vm(&format!("{prefix}-missing"));

    // Version.
    let v = t(tart.version()).await.unwrap();
    assert!(!v.raw.is_empty());

    // Missing VMs: get/run are NotFound, delete is Ok.
    assert_eq!(
        t(tart.get(&missing)).await.unwrap_err().kind,
        ErrorKind::NotFound
    );
    assert_eq!(
        expect_err(t(tart.run(&missing, &run_opts(&missing))).await).kind,
        ErrorKind::NotFound
    );
    t(tart.delete(&missing)).await.unwrap();
    assert_eq!(
        t(tart.clone_vm(missing.as_str(), &name, None))
            .await
            .unwrap_err()
            .kind,
        ErrorKind::NotFound
    );

    // Pull caches the image; clone makes a stopped local VM.
    t(tart.pull(image, None)).await.unwrap();
    let list = t(tart.list()).await.unwrap();
    assert!(
        list.iter()
            .any(|i| i.source == Source::Oci && i.name == image),
        "{list:?}"
    );
    // The cached tag points at a digest, and that digest is itself a cache entry.
    let (host, rest) = image.split_once('/').unwrap();
    let (repo, tag) = rest.rsplit_once(':').unwrap();
    let digest = t(tart.cached_digest(host, repo, tag))
        .await
        .expect("digest of a cached tag");
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    assert_eq!(t(tart.cached_digest(host, repo, "not-pulled")).await, None);
    assert_eq!(t(tart.cached_digest(host, "../..", tag)).await, None);
    t(tart.clone_vm(image, &name, None)).await.unwrap();
    let list = t(tart.list()).await.unwrap();
    let entry = list
        .iter()
        .find(|i| i.name == name.as_str())
        .expect("cloned VM listed");
    assert_eq!(entry.source, Source::Local);
    assert_eq!(entry.state, VmState::Stopped);

    // Set, then get reflects it.
    let set = SetOpts {
        cpu: Some(6),
        memory_mib: Some(12288),
        random_mac: true,
        ..SetOpts::default()
    };
    t(tart.set(&name, &set)).await.unwrap();
    let d = t(tart.get(&name)).await.unwrap();
    assert_eq!((d.cpu, d.memory_mib, d.state), (6, 12288, VmState::Stopped));

    // Run: alive, listed running, a second run is AlreadyRunning, delete is LockBusy.
    let opts = run_opts(&name);
    let h = t(tart.run(&name, &opts)).await.unwrap();
    assert!(h.is_alive());
    assert!(!h.adopted());
    assert_eq!(h.name(), &name);
    assert_eq!(t(tart.get(&name)).await.unwrap().state, VmState::Running);
    assert_eq!(
        expect_err(t(tart.run(&name, &opts)).await).kind,
        ErrorKind::AlreadyRunning
    );
    assert_eq!(
        t(tart.delete(&name)).await.unwrap_err().kind,
        ErrorKind::LockBusy
    );
    let ip = t(tart.ip(&name, Duration::from_secs(10), IpResolver::Dhcp))
        .await
        .unwrap();
    assert!(!ip.is_unspecified());

    // Attach finds the same process.
    let adopted = t(tart.attach(&name, &opts))
        .await
        .unwrap()
        .expect("running");
    assert!(adopted.adopted());
    assert_eq!(adopted.pid(), h.pid());

    // Stop: the guest obeys the shutdown request; every waiter sees a clean exit.
    let out = t(tart.stop(&h, Duration::from_secs(8))).await.unwrap();
    assert_eq!(out, StopOutcome::GuestShutdown);
    let exit = t(h.wait()).await;
    assert_eq!((exit.reason, exit.code), (ExitReason::Completed, Some(0)));
    let exit = t(adopted.wait()).await;
    assert!(matches!(
        exit.reason,
        ExitReason::Completed | ExitReason::Unknown
    ));
    assert!(!h.is_alive());
    assert_eq!(
        t(tart.stop(&h, Duration::from_secs(1))).await.unwrap(),
        StopOutcome::AlreadyStopped
    );
    assert!(t(tart.attach(&name, &opts)).await.unwrap().is_none());
    assert_eq!(t(tart.get(&name)).await.unwrap().state, VmState::Stopped);

    // Delete; gone from list and get.
    t(tart.delete(&name)).await.unwrap();
    assert_eq!(
        t(tart.get(&name)).await.unwrap_err().kind,
        ErrorKind::NotFound
    );
    assert!(
        !t(tart.list())
            .await
            .unwrap()
            .iter()
            .any(|i| i.name == name.as_str())
    );
}

#[tokio::test]
async fn mem_tart_meets_the_contract() {
    let mem = MemTart::new();
    let dir = tempfile::tempdir().unwrap();
    let log_dir = dir.path().to_owned();
    contract(&mem, "mem", IMAGE, |v| RunOpts {
        dirs: vec![],
        network: tart::Network::Shared,
        root_disk: Default::default(),
        suspendable: false,
        log_path: log_dir.join(format!("{v}.log")),
        log_cap_bytes: 1 << 20,
        start_window: Duration::from_millis(500),
    })
    .await;
}

#[tokio::test]
async fn tart_cli_with_fake_tart_meets_the_contract() {
    let home = Home::new();
    home.knobs(serde_json::json!({
        "latency_scale": 0.001,
        "images": {"default": {"compressed_gb": 1.0, "disk_gb": 20}}
    }));
    let cli = home.cli().build();
    contract(&cli, "fake", IMAGE, |v| home.run_opts(v)).await;
}

/// Against the real Tart on macOS: `TART_CONTRACT_REAL=1 cargo test -p tart-kubelet-tests
/// --test e2e tart_contract:: -- --ignored`. Pulls a real image (large) into a temporary TART_HOME
/// unless `TART_CONTRACT_HOME` names one.
#[tokio::test]
#[ignore = "needs macOS with tart; set TART_CONTRACT_REAL=1"]
async fn real_tart_meets_the_contract() {
    if std::env::var_os("TART_CONTRACT_REAL").is_none() {
        panic!("set TART_CONTRACT_REAL=1 to run against the real tart");
    }
    let home = Home::new();
    let tart_home = std::env::var_os("TART_CONTRACT_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| home.path().to_owned());
    // A Linux guest honours the shutdown request; macOS guests show a dialog (#842).
    let image = std::env::var("TART_CONTRACT_IMAGE")
        .unwrap_or_else(|_| "ghcr.io/cirruslabs/ubuntu:latest".to_owned());
    let cli = tart::TartCli::builder(tart_home).build();
    contract(&cli, "real", &image, |v| home.run_opts(v)).await;
}
