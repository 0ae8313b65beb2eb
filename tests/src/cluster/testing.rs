//! Small helpers the control-plane tests share: create a namespace, run a program with a
//! deadline.

use std::{process::Stdio, time::Duration};

use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, Client, api::PostParams};
use tokio::time::timeout;

/// Creates namespace `name` (deadline 20 s).
///
/// # Panics
/// When the API does not answer or refuses.
pub async fn create_namespace(client: &Client, name: &str) {
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
        .expect("namespace literal");
    timeout(
        Duration::from_secs(20),
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns),
    )
    .await
    .expect("create namespace: no answer")
    .expect("create namespace");
}

/// Runs a program with a 60 s deadline; returns (success, stdout, stderr).
///
/// # Panics
/// When it cannot be spawned or does not exit in time.
pub async fn run_program(program: &str, args: &[&str]) -> (bool, String, String) {
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = timeout(Duration::from_secs(60), child)
        .await
        .unwrap_or_else(|_| panic!("{program} did not exit within 60 s"))
        .unwrap_or_else(|e| panic!("spawning {program}: {e}"));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}
