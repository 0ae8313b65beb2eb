//! The README's main command, small: one simulated Mac mini, three CI-runner Pods. It must
//! exit 0, write the report with its documented keys, and every invariant must hold.
use std::time::Duration;

use tokio::time::timeout;

#[tokio::test]
async fn a_small_steady_sandbox_run_holds_every_invariant_and_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_sandbox"))
        .args(["--nodes", "1", "--pods", "3", "--latency-scale", "0.01"])
        .arg("--report")
        .arg(&report)
        .kill_on_drop(true)
        .output();
    let out = timeout(Duration::from_secs(300), run)
        .await
        .expect("sandbox did not finish within 300 s")
        .expect("spawn sandbox");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "sandbox failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("result: ok"), "{stdout}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["schema"], 1);
    assert_eq!(r["ok"], true);
    assert_eq!(r["pods"]["created"], 3);
    assert_eq!(r["pods"]["succeeded"], 3);
    assert_eq!(
        r["stages_seconds"]["boot"]["count"], 3,
        "boot counted once per Pod"
    );
    assert_eq!(r["stages_seconds"]["provision_delay"]["count"], 3);
    let names: Vec<&str> = r["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    for must in [
        "no_stranded_finalizer",
        "no_orphan_vm",
        "no_process_left",
        "no_control_plane_process_left",
        "pods_in_expected_terminal_state",
        "each_pod_counted_once_per_histogram",
    ] {
        assert!(
            names.contains(&must),
            "report lacks invariant {must}: {names:?}"
        );
    }
    assert!(r["agents"][0]["rss_bytes"].as_u64().unwrap() > 0);
}
