use super::*;

#[test]
fn glob_star_matches_any_run_and_literals_must_match() {
    assert!(glob_match("*", ""));
    assert!(glob_match("pod-*", "pod-abc"));
    assert!(glob_match("*-abc", "pod-abc"));
    assert!(glob_match("p*d*c", "pod-abc"));
    assert!(!glob_match("pod-*", "vm-abc"));
    assert!(!glob_match("ab*ba", "aba"));
    assert!(glob_match("exact", "exact"));
    assert!(!glob_match("exact", "exactly"));
}

#[test]
fn more_specific_vm_globs_override_less_specific_ones() {
    let knobs: Knobs = serde_json::from_str(
        r#"{"vms": {"*": {"ip_never": true, "shutdown_ms": 1},
                        "pod-*": {"shutdown_ms": 2},
                        "pod-a": {"ip_delay_ms": 3}}}"#,
    )
    .unwrap();
    let vm = knobs.vm("pod-a");
    assert_eq!(vm.ip_never, Some(true));
    assert_eq!(vm.shutdown_ms, Some(2));
    assert_eq!(vm.ip_delay_ms, Some(3));
    assert_eq!(knobs.vm("other").shutdown_ms, Some(1));
}

#[test]
fn contract_json_from_the_brief_parses() {
    let knobs: Knobs = serde_json::from_str(
        r#"{"version": "2.35.0", "latency_scale": 0.001, "pull_mb_per_s": 100,
                "clone_ms": 1000, "boot_ms": 10000,
                "images": {"default": {"compressed_gb": 25.0, "disk_gb": 50},
                           "r.io/a:1": {"compressed_gb": 1.0, "disk_gb": 20, "missing": false,
                                        "auth": {"username": "u", "password": "p"}}},
                "rules": [{"op": "clone", "vm": "prefix*", "times": 1, "action": {"hang": true}},
                          {"op": "pull", "action": {"fail": {"code": 1, "stderr": "Error: x"}}},
                          {"op": "pull", "action": {"delay_ms": 3000}},
                          {"op": "pull", "action": {"stall_at_percent": 40}},
                          {"op": "run", "action": {"vm_limit": true}},
                          {"op": "run", "action": {"aux_storage_locked": true}},
                          {"op": "clone", "action": {"no_space": true}},
                          {"op": "list", "action": {"invalid_utf8": true}}],
                "vms": {"*": {"guest_exit_after_ms": 5000, "guest_exit_code": 0,
                              "ignore_sigint": false, "ignore_sigusr2": false,
                              "shutdown_ms": 500, "ip_delay_ms": 10000, "ip_never": false}}}"#,
    )
    .unwrap();
    assert_eq!(knobs.rules.len(), 8);
    assert_eq!(knobs.rules[0].action, Action::Hang(true));
    assert_eq!(knobs.image("r.io/a:1").disk_gb, Some(20));
    assert_eq!(knobs.image("r.io/b:1").disk_gb, Some(50));
    assert_eq!(knobs.scaled_ms(10_000), 10);
}

#[test]
fn endpoint_states_are_strings_keyed_by_port_and_the_specific_glob_replaces_the_map() {
    let knobs: Knobs = serde_json::from_str(
        r#"{"loopback_ips": true,
                "vms": {"*": {"endpoints": {"80": "healthy", "81": "closed"}},
                        "pod-a": {"endpoints": {"8080": "failing"}, "exec_delay_ms": 5}}}"#,
    )
    .unwrap();
    let ports = |name: &str| knobs.vm(name).endpoints.unwrap_or_default();
    assert_eq!(
        ports("pod-a"),
        BTreeMap::from([(8080, EndpointState::Failing)])
    );
    assert_eq!(ports("pod-b")[&81], EndpointState::Closed);
    let all = [
        EndpointState::Healthy,
        EndpointState::Failing,
        EndpointState::Hanging,
        EndpointState::Closed,
    ];
    for state in all {
        let json = serde_json::to_string(&state).unwrap();
        assert_eq!(json, format!("\"{}\"", state.as_str()));
        assert_eq!(state.listens(), state != EndpointState::Closed);
    }
    assert!(serde_json::from_str::<EndpointState>("\"up\"").is_err());
}

#[test]
fn rule_without_vm_matches_every_name_and_vm_glob_needs_a_name() {
    let rule = Rule {
        op: "clone".into(),
        vm: None,
        times: None,
        action: Action::Hang(true),
    };
    assert!(rule.matches("clone", &["a"]));
    assert!(!rule.matches("pull", &["a"]));
    let rule = Rule {
        vm: Some("a*".into()),
        ..rule
    };
    assert!(rule.matches("clone", &["x", "ab"]));
    assert!(!rule.matches("clone", &[]));
}
