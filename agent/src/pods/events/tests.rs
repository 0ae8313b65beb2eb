//! Events: kubelet's reasons and messages, and our own.

use super::*;

#[test]
fn kubelet_reasons_and_messages() {
    let s = spec(&Occurrence::Pulling {
        image: "ghcr.io/a/b:1".into(),
    });
    assert_eq!((s.type_, s.reason.as_str()), (EventType::Normal, "Pulling"));
    assert_eq!(s.note, "Pulling image \"ghcr.io/a/b:1\"");
    let s = spec(&Occurrence::Started {
        container: "vm".into(),
    });
    assert_eq!(s.note, "Started container vm");
    let s = spec(&Occurrence::Killing {
        container: "vm".into(),
    });
    assert_eq!(
        (s.reason.as_str(), s.note.as_str()),
        ("Killing", "Stopping container vm")
    );
    let s = spec(&Occurrence::CreatingVm { vm: "tkl-1".into() });
    assert_eq!(s.reason, "CreatingVM");
}

#[test]
fn probe_events_use_kubelets_words() {
    let s = spec(&Occurrence::Probe {
        reason: EventReason::Unhealthy,
        message: "Readiness probe failed: HTTP probe failed with statuscode: 500".into(),
    });
    assert_eq!(
        (s.type_, s.reason.as_str()),
        (EventType::Warning, "Unhealthy")
    );
    let s = spec(&Occurrence::ProbeKilling {
        message: "Container job failed liveness probe, will be restarted".into(),
    });
    assert_eq!((s.type_, s.reason.as_str()), (EventType::Normal, "Killing"));
}

#[test]
fn host_faults_are_warnings_naming_the_problem() {
    let s = spec(&Occurrence::HostFault {
        kind: ErrorKind::VmLimit,
        message: "The number of VMs exceeds the system limit".into(),
    });
    assert_eq!(s.type_, EventType::Warning);
    assert_eq!(s.reason, "VMLimitReached");
    assert!(s.note.contains("limit of running macOS VMs"), "{}", s.note);
    assert!(s.note.contains("will retry"));
}

#[test]
fn waiting_for_slot_is_normal_with_a_clear_reason() {
    let s = spec(&Occurrence::WaitingForSlot { used: 2, total: 2 });
    assert_eq!(s.type_, EventType::Normal);
    assert_eq!(s.reason, "WaitingForVMSlot");
    assert!(s.note.contains("All 2 VM slots"));
}

#[test]
fn a_failure_message_never_doubles_the_error_prefix() {
    let s = spec(&Occurrence::Failed {
        message: "Error: VM needs at least 4 CPUs".into(),
    });
    assert_eq!(s.note, "Error: VM needs at least 4 CPUs");
    assert_eq!(without_error_prefix("Error: Error:  x"), "x");
    assert_eq!(without_error_prefix("plain"), "plain");
}

#[test]
fn long_notes_are_capped_on_a_char_boundary() {
    let s = spec(&Occurrence::Failed {
        message: "é".repeat(2000),
    });
    assert!(s.note.len() <= 1000);
    assert!(s.note.is_char_boundary(s.note.len()));
}

#[test]
fn hook_and_termination_events_say_what_happened() {
    let s = spec(&Occurrence::HookFailed {
        hook: HookKind::PostStart,
    });
    assert_eq!(
        (s.type_, s.reason.as_str(), s.note.as_str()),
        (
            EventType::Warning,
            "FailedPostStartHook",
            "PostStartHook failed"
        )
    );
    let s = spec(&Occurrence::HookFailed {
        hook: HookKind::PreStop,
    });
    assert_eq!(s.reason, "FailedPreStopHook");
    assert_ne!(
        Occurrence::HookFailed {
            hook: HookKind::PreStop
        }
        .kind(),
        Occurrence::HookFailed {
            hook: HookKind::PostStart
        }
        .kind(),
        "each hook's failures are counted apart"
    );
    let s = spec(&Occurrence::WaitingForJob {
        left: Duration::from_secs(58),
    });
    assert_eq!(
        (s.type_, s.reason.as_str()),
        (EventType::Normal, "WaitingForJob")
    );
    assert!(s.note.contains("58s"), "{}", s.note);
    let s = spec(&Occurrence::GracePeriodExpired {
        grace: Duration::from_secs(5),
    });
    assert_eq!(
        (s.type_, s.reason.as_str()),
        (EventType::Warning, "GracePeriodExpired")
    );
    assert!(s.note.contains("5s"), "{}", s.note);
}

#[test]
fn a_job_that_exits_non_zero_failed_and_only_a_real_death_is_the_vm_dying() {
    let job = Occurrence::JobFailed {
        summary: "the job exited with 3; no guest vitals".into(),
    };
    let s = spec(&job);
    assert_eq!(
        (s.type_, s.reason.as_str(), s.note.as_str()),
        (
            EventType::Warning,
            "JobFailed",
            "The job failed: the job exited with 3; no guest vitals"
        )
    );
    assert!(!s.note.contains("VM died"));
    let died = Occurrence::VmDied {
        reason: "OOMKilled",
        summary: "the guest ran out of memory".into(),
    };
    let s = spec(&died);
    assert_eq!(s.note, "The VM died: the guest ran out of memory");
    assert_eq!(
        job.kind(),
        died.kind(),
        "one event per run's end, either way"
    );
}
