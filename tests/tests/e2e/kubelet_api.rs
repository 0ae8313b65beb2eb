//! End-to-end: the agent's kubelet API on the real control plane. The API server reaches it
//! with its kubelet client certificate (x509 authentication, then a SubjectAccessReview), and
//! verifies the agent's serving certificate against the cluster CA
//! (`--kubelet-certificate-authority`). Direct callers: no credentials get 401, a
//! ServiceAccount token without `nodes/proxy` rights gets 403, one with them gets through.
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e kubelet_api:: -- --nocapture`

use crate::pod_support;

use std::time::Duration;

use pod_support::{Env, WAIT, phase};
use tart_kubelet_tests::{
    cluster::{testing::run_program, wait_for},
    fake::Knobs,
};

/// An agent serving the kubelet API on its own port with the cluster's test PKI.
async fn env(label: &str) -> (Env, u16) {
    Env::with_kubelet_api(label, Knobs::new().with_latency_scale(0.001), &[]).await
}

/// `curl -k` to the agent: (HTTP status, body).
async fn curl(port: u16, path: &str, token: Option<&str>) -> (u16, String) {
    let url = format!("https://127.0.0.1:{port}{path}");
    let header = token.map(|t| format!("Authorization: Bearer {t}"));
    let mut args = vec!["-sk", "--max-time", "10", "-w", "\n%{http_code}"];
    if let Some(h) = &header {
        args.extend(["-H", h.as_str()]);
    }
    args.push(&url);
    let (_, out, _) = run_program("curl", &args).await;
    let (body, code) = out.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// `kubectl --kubeconfig <admin> args...`: (success, stdout, stderr).
async fn kubectl(env: &Env, args: &[&str]) -> (bool, String, String) {
    let kc = env.cp.kubeconfig_path().display().to_string();
    let mut all = vec!["--kubeconfig", kc.as_str(), "--request-timeout", "20s"];
    all.extend_from_slice(args);
    run_program("kubectl", &all).await
}

/// Waits until the agent answers on its port (401 to an anonymous call).
async fn wait_serving(env: &Env, port: u16) {
    let r = wait_for(WAIT, || async {
        (curl(port, "/healthz", None).await.0 == 401).then_some(())
    })
    .await;
    assert!(
        r.is_ok(),
        "kubelet API never answered; agent log:\n{}",
        env.agent_log()
    );
}

/// A bearer token of a new ServiceAccount `name` in the test namespace.
async fn service_account_token(env: &Env, name: &str) -> (String, String) {
    let (ok, _, err) = kubectl(env, &["-n", &env.ns, "create", "serviceaccount", name]).await;
    assert!(ok, "create serviceaccount: {err}");
    let (ok, token, err) = kubectl(env, &["-n", &env.ns, "create", "token", name]).await;
    assert!(ok, "create token: {err}");
    (
        token.trim().to_owned(),
        format!("system:serviceaccount:{}:{name}", env.ns),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_gets_401_and_a_token_without_nodes_proxy_gets_403() {
    let (env, port) = env("kapi-auth").await;
    wait_serving(&env, port).await;
    assert_eq!(
        curl(port, "/pods", None).await,
        (401, "Unauthorized".into())
    );

    let (token, user) = service_account_token(&env, "viewer").await;
    let (status, body) = curl(port, "/pods", Some(&token)).await;
    assert_eq!(
        (status, body),
        (
            403,
            format!("Forbidden (user={user}, verb=get, resource=nodes, subresource=proxy)")
        )
    );
    assert_eq!(curl(port, "/healthz", Some("not-a-token")).await.0, 401);

    // The same kind of token with `get nodes/proxy` passes the agent's review.
    let (token, user) = service_account_token(&env, "prober").await;
    let role = format!("{}-nodes-proxy", env.ns);
    let (ok, _, err) = kubectl(
        &env,
        &[
            "create",
            "clusterrole",
            &role,
            "--verb=get",
            "--resource=nodes/proxy",
        ],
    )
    .await;
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl(
        &env,
        &[
            "create",
            "clusterrolebinding",
            &role,
            "--clusterrole",
            &role,
            "--user",
            &user,
        ],
    )
    .await;
    assert!(ok, "{err}");
    let r = wait_for(Duration::from_secs(30), || async {
        (curl(port, "/healthz", Some(&token)).await == (200, "ok".into())).then_some(())
    })
    .await;
    assert!(
        r.is_ok(),
        "granted token never admitted; agent log:\n{}",
        env.agent_log()
    );
    let _ = kubectl(&env, &["delete", "clusterrolebinding,clusterrole", &role]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_reaches_the_agent_through_the_node_proxy_and_for_logs() {
    let (env, port) = env("kapi-proxy").await;
    wait_serving(&env, port).await;
    let healthz = format!("/api/v1/nodes/{}/proxy/healthz", env.node);
    // The Node must be registered with its address and port before the API server can dial it.
    let r = wait_for(WAIT, || async {
        let (ok, out, _) = kubectl(&env, &["get", "--raw", &healthz]).await;
        (ok && out == "ok").then_some(())
    })
    .await;
    assert!(
        r.is_ok(),
        "node proxy healthz never ok; agent log:\n{}",
        env.agent_log()
    );
    let (ok, out, err) = kubectl(
        &env,
        &[
            "get",
            "--raw",
            &format!("/api/v1/nodes/{}/proxy/pods", env.node),
        ],
    )
    .await;
    assert!(ok, "{err}");
    let list: serde_json::Value = serde_json::from_str(&out).expect("PodList JSON");
    assert_eq!(
        (list["kind"].as_str(), list["apiVersion"].as_str()),
        (Some("PodList"), Some("v1"))
    );
    let (_, node, _) = kubectl(
        &env,
        &[
            "get",
            "node",
            &env.node,
            "-o",
            "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}",
        ],
    )
    .await;
    assert_eq!(node, port.to_string());

    // `kubectl logs` reaches the agent's /containerLogs: whatever the log source answers, it
    // is the agent's answer, not a connection or certificate error. (A 404 from the agent
    // becomes the API server's generic NotFound for `pods/log`; 1.20 does not pass the body on.)
    env.create(&env.pod("vm-1")).await;
    env.wait_pod("vm-1", "Running", |p| phase(p) == "Running")
        .await;
    let (ok, out, err) = kubectl(&env, &["-n", &env.ns, "logs", "vm-1"]).await;
    assert!(
        ok || err.contains("not collected")
            || err.contains("(NotFound)") && err.contains("pods/log"),
        "kubectl logs did not reach the agent: {out}{err}"
    );
    assert!(!err.contains("dial tcp") && !err.contains("x509"), "{err}");

    // exec reaches the agent too, over a verified connection, and runs in the guest
    // (fake-tart's builtin `echo`).
    let (ok, out, err) = kubectl(&env, &["-n", &env.ns, "exec", "vm-1", "--", "echo", "hi"]).await;
    assert!(ok && out == "hi\n", "{out}{err}\n{}", env.agent_log());
}
