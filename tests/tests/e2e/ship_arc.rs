//! packaging/arc: the gha-runner-scale-set values for Macs parse as YAML, fit the chart's values
//! schema (a copy in `packaging/arc/chart/`) and use only the chart's top-level keys, and their
//! runner template has what a Mac needs; the runner Pod they yield, created exactly as
//! actions-runner-controller's EphemeralRunner controller creates it (owner reference to an
//! EphemeralRunner, ARC's labels and annotations, the JIT config Secret and the env it appends),
//! runs `packaging/arc/tart-runner-entry` with a stand-in runner to completion and ends
//! `Succeeded`. The checks of the values run in Debian's Python (`python3-yaml`,
//! `python3-jsonschema`, installed by `tests/cluster/build.sh`).
//!
//! Run: `cargo test -p tart-kubelet-tests --test e2e ship_arc:: -- --nocapture`

use crate::pod_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::core::v1::Pod;
use pod_support::{Env, WAIT, phase};
use tart_kubelet_tests::{
    cluster::{testing::run_program, wait_for},
    fake::{Knobs, VmKnob},
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Debian's Python, with the checks' modules.
const PYTHON: &str = "/usr/bin/python3";

/// Loads the values, validates them against the chart's schema and known keys, and prints them
/// as JSON.
const CHECK: &str = r#"
import json, sys, yaml, jsonschema
values = yaml.safe_load(open(sys.argv[1]))
schema = json.load(open(sys.argv[2]))
jsonschema.Draft202012Validator.check_schema(schema)
jsonschema.Draft202012Validator(schema).validate(values)
known = set(open(sys.argv[3]).read().split())
unknown = sorted(set(values) - known)
if unknown:
    sys.exit("keys the chart does not know: %s" % unknown)
print(json.dumps(values))
"#;

/// The values file, checked, as JSON.
fn values() -> serde_json::Value {
    let arc = repo().join("packaging/arc");
    let out = Command::new(PYTHON)
        .arg("-c")
        .arg(CHECK)
        .arg(arc.join("values.yaml"))
        .arg(arc.join("chart/values.schema.json"))
        .arg(arc.join("chart/values-keys.txt"))
        .output()
        .expect("python3: install Debian's python3-yaml and python3-jsonschema (tests/cluster/build.sh does)");
    assert!(
        out.status.success(),
        "packaging/arc/values.yaml does not fit the chart: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_values_fit_the_charts_schema_and_target_the_macs() {
    let v = values();
    assert!(
        v.get("containerMode").is_none(),
        "no container mode on macOS"
    );
    let spec = &v["template"]["spec"];
    assert_eq!(spec["nodeSelector"]["kubernetes.io/os"], "darwin");
    assert_eq!(spec["restartPolicy"], "Never");
    let tolerates = spec["tolerations"].as_array().unwrap().iter().any(|t| {
        t["key"] == "virtual-kubelet.io/provider"
            && t["value"] == "tart"
            && t["effect"] == "NoSchedule"
    });
    assert!(tolerates, "the default taint is tolerated: {spec}");
    let runner = spec["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "runner")
        .expect("ARC appends the JIT config to the container named runner");
    assert_eq!(runner["resources"]["limits"]["tart.run/vm-slots"], "1");
    assert_eq!(runner["command"][0], "/usr/local/bin/tart-runner-entry");
    // The same schema refuses what the chart refuses.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "listenerConfig:\n  scaler:\n    qps: 0\n").unwrap();
    let arc = repo().join("packaging/arc");
    let out = Command::new(PYTHON)
        .arg("-c")
        .arg(CHECK)
        .arg(&bad)
        .arg(arc.join("chart/values.schema.json"))
        .arg(arc.join("chart/values-keys.txt"))
        .output()
        .unwrap();
    assert!(!out.status.success(), "qps 0 passed the schema");
}

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ephemeralrunners.actions.github.com
spec:
  group: actions.github.com
  names:
    kind: EphemeralRunner
    listKind: EphemeralRunnerList
    plural: ephemeralrunners
    singular: ephemeralrunner
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// Installs the EphemeralRunner CRD (idempotent; the tests share the cluster) and waits until
/// it is served.
async fn install_crd(env: &Env) {
    wait_for(WAIT, || async {
        let kc = env.cp.kubeconfig_path().display().to_string();
        let dir = tempfile::tempdir().ok()?;
        let f = dir.path().join("crd.yaml");
        std::fs::write(&f, CRD).ok()?;
        let f = f.display().to_string();
        let (ok, _, _) = run_program("kubectl", &["--kubeconfig", &kc, "apply", "-f", &f]).await;
        let crd = "crd/ephemeralrunners.actions.github.com";
        let (est, _, _) = run_program(
            "kubectl",
            &[
                "--kubeconfig",
                &kc,
                "wait",
                "--for=condition=established",
                "--timeout=20s",
                crd,
            ],
        )
        .await;
        (ok && est).then_some(())
    })
    .await
    .expect("the EphemeralRunner CRD is served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runner_pod_arc_creates_from_the_values_runs_the_entry_to_success() {
    let values = values();
    let knobs = Knobs::new()
        .with_latency_scale(0.001)
        .with_vm("*", VmKnob::default().running_guest_launcher());
    // A Mac mini's capacity (8 cores, 24 GiB), which the runner's resources fit twice.
    let mut env = Env::new("arc", knobs, &["--cpu", "8", "--memory", "24Gi"]).await;
    env.start_agent();
    install_crd(&env).await;

    // What the controller creates: an EphemeralRunner, then a Secret and a Pod named like it.
    let name = "macos-arm64-7x9kq-runner-b4d2f";
    let scale_set = values["runnerScaleSetName"].as_str().unwrap();
    let labels = serde_json::json!({
        "app.kubernetes.io/component": "runner",
        "app.kubernetes.io/part-of": "gha-runner-scale-set",
        "app.kubernetes.io/version": "0.14.2",
        "actions.github.com/scale-set-name": scale_set,
        "actions.github.com/scale-set-namespace": env.ns,
        "actions.github.com/organization": "your-org",
        "actions-ephemeral-runner": "True",
        "pod-template-hash": "5d8f7c6b9",
    });
    let template = values["template"]["spec"].clone();
    let runner = serde_json::json!({
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"name": name, "namespace": env.ns, "labels": labels},
        "spec": {
            "githubConfigUrl": values["githubConfigUrl"],
            "githubConfigSecret": values["githubConfigSecret"],
            "runnerScaleSetId": 1,
            "spec": template,
        },
    });
    env.kubectl_stdin(&["apply", "-f", "-"], &runner.to_string())
        .await;
    let uid = env
        .kubectl_stdin(
            &[
                "-n",
                &env.ns,
                "get",
                "ephemeralrunner",
                name,
                "-o",
                "jsonpath={.metadata.uid}",
            ],
            "",
        )
        .await;
    let owner = serde_json::json!([{
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "name": name,
        "uid": uid.trim(),
        "controller": true,
        "blockOwnerDeletion": true,
    }]);
    let jit = "eyJzdGFuZC1pbiI6ImppdC1jb25maWcifQ==";
    let secret = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": env.ns, "ownerReferences": owner},
        "stringData": {"jitToken": jit, "runnerName": name, "runnerId": "42", "scaleSetId": "1"},
    });
    env.kubectl_stdin(&["apply", "-f", "-"], &secret.to_string())
        .await;

    // A stand-in for the GitHub runner: prints what it was started with and ends as a finished
    // job does.
    let runner_dir = tempfile::tempdir().unwrap();
    let run_sh = runner_dir.path().join("run.sh");
    std::fs::write(
        &run_sh,
        "#!/bin/sh\nprintf 'jit=%s agent=%s args=%s\\n' \"$ACTIONS_RUNNER_INPUT_JITCONFIG\" \
         \"$GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT\" \"$#\"\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(&run_sh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let mut spec = values["template"]["spec"].clone();
    // The scheduler places it, through the values' selector, toleration and VM-slot request;
    // other tests' Macs share this control plane, so the selector also names this test's one.
    spec["nodeSelector"]["kubernetes.io/hostname"] = env.node.clone().into();
    let c = &mut spec["containers"][0];
    // fake-tart's guest is this Linux host: the packaged entry runs from the repository, the
    // image is one fake-tart serves, and there is no `admin` user (UID 501) to switch to.
    c["command"] = serde_json::json!(["/bin/sh", repo().join("packaging/arc/tart-runner-entry")]);
    c["image"] = "ghcr.io/cirruslabs/macos-sequoia-base:latest".into();
    c.as_object_mut().unwrap().remove("securityContext");
    // What the controller appends to the runner container.
    c["env"] = serde_json::json!([
        {"name": "RUNNER_DIR", "value": runner_dir.path()},
        {"name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
         "valueFrom": {"secretKeyRef": {"name": name, "key": "jitToken"}}},
        {"name": "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT", "value": "actions-runner-controller/0.14.2"},
        {"name": "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE", "value": "1"},
    ]);
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": name,
            "namespace": env.ns,
            "labels": labels,
            "annotations": {
                "actions.github.com/runner-group-name": "default",
                "actions.github.com/runner-scale-set-name": scale_set,
                "actions.github.com/patch-id": "0",
            },
            "ownerReferences": owner,
        },
        "spec": spec,
    }))
    .unwrap();
    let pod = env.create(&pod).await;
    let done = env
        .wait_pod(name, "Succeeded", |p| {
            phase(p) == "Succeeded" || phase(p) == "Failed"
        })
        .await;
    let status = done.status.clone().unwrap();
    let runner = status
        .container_statuses
        .clone()
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.name == "runner")
        .unwrap_or_else(|| {
            panic!("no status of the runner container, which ARC reads: {status:?}")
        });
    let exit = runner.state.and_then(|s| s.terminated).map(|t| t.exit_code);
    assert_eq!(
        (phase(&done), exit),
        ("Succeeded", Some(0)),
        "{status:?}\n{}",
        env.agent_log()
    );
    let stdout = env
        .guest_dir
        .join(Env::vm_of(&pod))
        .join("status")
        .join("stdout");
    let out = std::fs::read_to_string(&stdout).unwrap_or_default();
    assert!(
        out.contains(&format!(
            "jit={jit} agent=actions-runner-controller/0.14.2 args=0"
        )),
        "the runner got the JIT config from the Secret, not on its command line: {out:?}"
    );
}
