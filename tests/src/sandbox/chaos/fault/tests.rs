use super::*;

#[test]
fn fault_names_are_distinct_snake_case() {
    let names: std::collections::BTreeSet<&str> = Fault::ALL.iter().map(|f| f.as_str()).collect();
    assert_eq!(names.len(), Fault::ALL.len());
    assert!(
        names
            .iter()
            .all(|n| n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
    );
}

#[test]
fn agent_level_faults_are_serialised_and_tart_faults_never_wait() {
    let idle = Busy::default();
    let api = Busy {
        api_restart: true,
        ..idle
    };
    let dup_on_1 = Busy {
        duplicate_on: Some(1),
        ..idle
    };
    let recent = Busy {
        since_api_restart: Some(Duration::from_secs(10)),
        ..idle
    };
    let long_ago = Busy {
        since_api_restart: Some(API_RESTART_SPACING),
        ..idle
    };
    let table: [(Fault, usize, Busy, bool); 14] = [
        (Fault::HangClone, 0, api, true),
        (Fault::CrashWindow, 1, dup_on_1, true),
        (Fault::AgentRestart, 0, idle, true),
        (Fault::AgentRestart, 0, api, false),
        (Fault::AgentRestart, 1, dup_on_1, false),
        (Fault::AgentRestart, 0, dup_on_1, true),
        (Fault::DuplicateAgent, 0, idle, true),
        (Fault::DuplicateAgent, 0, api, false),
        (Fault::DuplicateAgent, 0, dup_on_1, false),
        (Fault::ApiRestart, 0, idle, true),
        (Fault::ApiRestart, 0, api, false),
        (Fault::ApiRestart, 0, dup_on_1, false),
        (Fault::ApiRestart, 0, recent, false),
        (Fault::ApiRestart, 0, long_ago, true),
    ];
    for (fault, target, busy, allowed) in table {
        assert_eq!(
            blocked(fault, target, busy).is_none(),
            allowed,
            "{fault:?} on {target} with {busy:?}"
        );
    }
}
