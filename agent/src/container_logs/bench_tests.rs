//! The write→read latency of a log line: the guest appends a line to `status/stdout`, the
//! collector turns it into a record, a following reader streams it. Run with
//! `cargo test -p tart-kubelet container_logs::bench_tests -- --ignored --nocapture`.

use std::io::Write;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::{CollectorSpec, LogWatch, PodLogId, format::LogQuery, read, spawn};

const LINES: usize = 1000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: about 30 s; prints p50 and p99"]
async fn write_to_read_latency_over_1000_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let status = tmp.path().join("status");
    std::fs::create_dir_all(&status).unwrap();
    let pod = PodLogId {
        namespace: "ns".into(),
        name: "p".into(),
        uid: "u".into(),
    };
    let root = tmp.path().join("pods");
    let watch = LogWatch::start(Default::default());
    let spec = CollectorSpec::for_vm(
        root.clone(),
        pod.clone(),
        "c".into(),
        0,
        &status,
        tmp.path().join("vm.log"),
        watch.clone(),
    );
    let collector = spawn(spec);
    let mut out = std::fs::File::create(status.join("stdout")).unwrap();
    out.write_all(b"start\n").unwrap();

    // The first record makes the log exist; then follow it.
    let q = LogQuery {
        follow: true,
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let stream = loop {
        match read(&root, &pod, "c", &q, &watch).await {
            Ok(s) => break s,
            Err(e) => assert!(Instant::now() < deadline, "{e}"),
        }
        tokio::task::yield_now().await;
    };
    let mut stream = Box::pin(stream);
    let mut got = String::new();
    let mut latencies = Vec::with_capacity(LINES);
    for i in 0..LINES {
        let line = format!("line {i}\n");
        let t0 = Instant::now();
        out.write_all(line.as_bytes()).unwrap();
        while !got.ends_with(&line) {
            let chunk = tokio::time::timeout(Duration::from_secs(5), stream.next())
                .await
                .expect("line arrives")
                .expect("stream open")
                .unwrap();
            got.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        latencies.push(t0.elapsed());
    }
    latencies.sort();
    let p = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    println!(
        "write->read latency over {LINES} lines: p50 {:?} p99 {:?} max {:?}",
        p(0.50),
        p(0.99),
        latencies[LINES - 1]
    );
    assert!(p(0.99) <= Duration::from_millis(100), "p99 {:?}", p(0.99));
    collector.finish().await;
}
