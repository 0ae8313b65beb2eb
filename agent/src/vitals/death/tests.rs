use super::*;

fn guest(pressure: u32, free: u8, jetsam: u64) -> GuestSample {
    GuestSample {
        ts: Some(1),
        pressure: PressureLevel::from_level(pressure),
        free_percent: Some(free),
        jetsam_kills: Some(jetsam),
        swap_used_bytes: Some(512 << 20),
        ..GuestSample::default()
    }
}

fn host(pressure: u32) -> HostSample {
    HostSample {
        pressure: PressureLevel::from_level(pressure),
        free_percent: Some(30),
        ..HostSample::default()
    }
}

fn ending() -> Ending {
    Ending {
        guest_exit: None,
        command_ran: true,
        tart_code: 0,
        tart_signaled: false,
        fault: None,
        guest_silent: false,
    }
}

/// The cause and the `DisruptionTarget` reason expected; `None` for a clean end.
type Want = Option<(DeathCause, Option<&'static str>)>;

/// Name, how the run ended, guest samples, host samples, expectation.
type Row<'a> = (&'a str, Ending, &'a [GuestSample], Vec<HostSample>, Want);

#[test]
fn deaths_are_classified_by_how_they_ended_and_the_last_samples() {
    let exited = |c| Ending {
        guest_exit: Some(c),
        ..ending()
    };
    let killed = Ending {
        tart_code: 137,
        tart_signaled: true,
        ..ending()
    };
    let fault = |f| Ending {
        fault: Some(f),
        ..ending()
    };
    let ok = [guest(1, 60, 0)];
    let oom = [guest(1, 40, 0), guest(2, 10, 0), guest(4, 2, 3)];
    let critical_no_kill = [guest(4, 2, 0)];
    use DeathCause::*;
    #[rustfmt::skip]
    let table: Vec<Row<'_>> = vec![
        ("clean exit", exited(0), &ok, vec![host(1)], None),
        ("idle guest, tart 0", Ending { command_ran: false, ..ending() }, &ok, vec![host(1)], None),
        ("job fails on its own", exited(3), &ok, vec![host(1)], Some((JobError, None))),
        ("jetsam kills, job exits", exited(1), &oom, vec![host(1)], Some((OomKilled, None))),
        ("critical guest, killed job", exited(137), &critical_no_kill, vec![host(1)], Some((OomKilled, None))),
        ("critical guest, plain failure", exited(2), &critical_no_kill, vec![host(1)], Some((JobError, None))),
        ("host critical, VM killed", killed, &ok, vec![host(1), host(4)], Some((HostMemoryPressure, Some("HostMemoryPressure")))),
        ("host critical 3 samples ago", killed, &ok, vec![host(4), host(2), host(2)], Some((HostMemoryPressure, Some("HostMemoryPressure")))),
        ("host critical long ago", killed, &ok, vec![host(4), host(2), host(2), host(1)], Some((KilledFromOutside, Some("VMKilledFromOutside")))),
        ("VM killed, host fine", killed, &ok, vec![host(1)], Some((KilledFromOutside, Some("VMKilledFromOutside")))),
        ("VM died, tart nonzero", Ending { tart_code: 1, ..ending() }, &[], vec![], Some((KilledFromOutside, Some("VMKilledFromOutside")))),
        ("VZ error with exit 0", fault(HostFaultKind::Virtualization), &ok, vec![host(1)], Some((HostFault, Some("VirtualizationError")))),
        ("VM limit", fault(HostFaultKind::VmLimit), &ok, vec![host(4)], Some((HostFault, Some("VMLimitReached")))),
        ("guest OOM took the VM down", ending(), &oom, vec![host(1)], Some((OomKilled, None))),
        ("no end reported, nothing known", ending(), &[], vec![], Some((JobError, None))),
    ];
    for (name, end, g, h, want) in table {
        let got = classify(&end, g, &h).map(|v| (v.cause, v.disruption));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn the_summary_names_the_last_memory_samples() {
    let end = Ending {
        guest_exit: Some(137),
        ..ending()
    };
    let g = [guest(1, 40, 0), guest(2, 10, 0), guest(4, 2, 3)];
    let v = classify(&end, &g, &[host(1)]).unwrap();
    assert!(v.oom());
    assert_eq!(v.event_reason(), "OOMKilled");
    assert_eq!(
        v.summary,
        "the guest ran out of memory; guest memory free 40%,10%,2% pressure normal,warning,critical swap 512Mi jetsam kills 3; host pressure normal free 30%"
    );
    let silent = Ending {
        guest_silent: true,
        tart_code: 137,
        tart_signaled: true,
        guest_exit: None,
        ..ending()
    };
    let v = classify(&silent, &[], &[host(4)]).unwrap();
    assert_eq!(v.event_reason(), "HostMemoryPressure");
    assert!(v.summary.contains("stopped reporting"), "{}", v.summary);
    assert!(v.summary.contains("no guest vitals"), "{}", v.summary);
}

#[test]
fn run_output_names_host_faults() {
    assert_eq!(
        host_fault_in(
            "guest has stopped the virtual machine due to error: Error Domain=VZErrorDomain Code=1"
        ),
        Some(HostFaultKind::Virtualization)
    );
    assert_eq!(
        host_fault_in("The number of VMs exceeds the system limit (other running VMs: a, b)"),
        Some(HostFaultKind::VmLimit)
    );
    assert_eq!(host_fault_in("guest has stopped the virtual machine"), None);
}

#[test]
fn causes_are_the_agreed_label_set() {
    let labels: Vec<&str> = DeathCause::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        labels,
        [
            "oom_killed",
            "host_memory_pressure",
            "killed_from_outside",
            "host_fault",
            "job_error"
        ]
    );
}
