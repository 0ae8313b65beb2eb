//! packaging/kubernetes/rbac.yaml grants exactly what the agent identity uses: every permission
//! `tart-kubelet doctor` checks for it (`tart_kubelet::ship::rbac`), plus doctor's own
//! SelfSubjectAccessReview — and nothing else. The end-to-end tests run the agent under this
//! manifest, so a missing verb fails them; this test fails on a verb too many.
use std::{collections::BTreeSet, path::Path, process::Command};

use serde_json::Value;
use tart_kubelet::ship::rbac::{AGENT, ALWAYS, LEASE_NAMESPACE};

/// (group, resource[/subresource], verb, namespace) — namespace "" for a ClusterRole.
type Grant = (String, String, String, String);

fn manifest() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/kubernetes/rbac.yaml");
    // Debian's python3 has PyYAML (a dependency of python3-kubernetes, installed by
    // tests/cluster/build.sh); a pyenv python3 on PATH may not.
    let out = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(&path)
        .output()
        .expect("/usr/bin/python3 (Debian)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn granted(docs: &[Value]) -> BTreeSet<Grant> {
    let mut g = BTreeSet::new();
    for d in docs {
        let ns = match d["kind"].as_str() {
            Some("ClusterRole") => "",
            Some("Role") => d["metadata"]["namespace"].as_str().unwrap(),
            _ => continue,
        };
        for rule in d["rules"].as_array().unwrap() {
            let strs = |k: &str| -> Vec<String> {
                rule[k]
                    .as_array()
                    .unwrap_or_else(|| panic!("rule without {k}: {rule}"))
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
                    .collect()
            };
            assert!(
                rule.get("resourceNames").is_none(),
                "resourceNames cannot restrict create or list; see the manifest's header"
            );
            for group in strs("apiGroups") {
                for res in strs("resources") {
                    for verb in strs("verbs") {
                        assert_ne!(verb, "*", "wildcard verb in {rule}");
                        assert_ne!(res, "*", "wildcard resource in {rule}");
                        g.insert((group.clone(), res.clone(), verb, ns.to_owned()));
                    }
                }
            }
        }
    }
    g
}

fn required() -> BTreeSet<Grant> {
    let mut r: BTreeSet<Grant> = ALWAYS
        .iter()
        .chain(AGENT)
        .map(|p| {
            let res = if p.subresource.is_empty() {
                p.resource.to_owned()
            } else {
                format!("{}/{}", p.resource, p.subresource)
            };
            (
                p.group.to_owned(),
                res,
                p.verb.to_owned(),
                p.namespace.to_owned(),
            )
        })
        .collect();
    r.insert((
        "authorization.k8s.io".into(),
        "selfsubjectaccessreviews".into(),
        "create".into(),
        String::new(),
    ));
    r
}

#[test]
fn shipped_rbac_grants_exactly_what_the_agent_and_doctor_use() {
    let g = granted(&manifest());
    let r = required();
    let extra: Vec<_> = g.difference(&r).collect();
    let missing: Vec<_> = r.difference(&g).collect();
    assert!(extra.is_empty(), "granted but never used: {extra:?}");
    assert!(missing.is_empty(), "used but not granted: {missing:?}");
    assert!(
        g.iter()
            .any(|(_, res, _, ns)| res == "leases" && ns == LEASE_NAMESPACE),
        "leases are granted in {LEASE_NAMESPACE} only"
    );
}

#[test]
fn the_comparison_sees_a_verb_too_many() {
    let mut docs = manifest();
    let role = docs
        .iter_mut()
        .find(|d| d["kind"] == "ClusterRole")
        .unwrap();
    role["rules"][0]["verbs"]
        .as_array_mut()
        .unwrap()
        .push("update".into());
    let g = granted(&docs);
    assert!(g.difference(&required()).any(|(_, _, v, _)| v == "update"));
}
