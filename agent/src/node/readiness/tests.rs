use super::*;
use crate::{
    hostcheck::Failure,
    node::health::{HostFault, TartProbe},
};

fn snap(check: bool, quarantine: Option<Instant>) -> HealthSnapshot {
    HealthSnapshot {
        probe: TartProbe::Ok {
            version: "2.35.0".into(),
        },
        fault: quarantine.map(|since| HostFault {
            kind: tart::ErrorKind::AuxStorageLocked,
            count: 3,
            since,
            until: since,
        }),
        checks: check
            .then(|| Failure {
                check: HostCheck::GuiSession,
                message: "no GUI session".into(),
            })
            .into_iter()
            .collect(),
        unavailable_profiles: Default::default(),
        checked: true,
    }
}

fn reasons(ev: &[NodeEvent]) -> Vec<&'static str> {
    ev.iter().map(|e| e.reason).collect()
}

#[test]
fn each_transition_gives_one_event_each_way() {
    let t0 = Instant::now();
    let t1 = t0 + Duration::from_secs(1);
    let mut t = Transitions::default();
    // (check failing, quarantine since) -> (events, quarantine started)
    type Step = ((bool, Option<Instant>), (&'static [&'static str], bool));
    let steps: &[Step] = &[
        ((false, None), (&[], false)),
        ((true, None), (&["HostNotReadyForVMs"], false)),
        ((true, None), (&[], false)),
        ((false, None), (&["HostReadyForVMs"], false)),
        (
            (false, Some(t0)),
            (&["NodeQuarantined", "HostNotReadyForVMs"], true),
        ),
        ((false, Some(t0)), (&[], false)),
        ((false, Some(t1)), (&["NodeQuarantined"], true)),
        (
            (false, None),
            (&["NodeQuarantineLifted", "HostReadyForVMs"], false),
        ),
    ];
    for (i, ((check, q), (want, started))) in steps.iter().enumerate() {
        let (ev, s) = t.update(&snap(*check, *q));
        assert_eq!((reasons(&ev).as_slice(), s), (*want, *started), "step {i}");
    }
}

#[test]
fn a_quarantine_behind_a_failing_check_still_counts_once() {
    let t0 = Instant::now();
    let mut t = Transitions::default();
    let (ev, started) = t.update(&snap(true, Some(t0)));
    assert!(started);
    assert_eq!(reasons(&ev), ["NodeQuarantined", "HostNotReadyForVMs"]);
    let (ev, started) = t.update(&snap(false, Some(t0)));
    assert!(!started);
    assert_eq!(reasons(&ev), ["HostNotReadyForVMs"], "the reason changed");
}

#[test]
fn the_metrics_expose_every_check_at_zero() {
    let mut reg = Registry::default();
    let _m = ReadinessMetrics::register(&mut reg);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
    for c in HostCheck::ALL {
        let series = format!(
            "tart_kubelet_host_check_failing{{check=\"{}\"}} 0",
            c.as_str()
        );
        assert!(text.contains(&series), "{series} in\n{text}");
    }
    assert!(text.contains("tart_kubelet_node_quarantined 0"));
    assert!(text.contains("tart_kubelet_node_quarantines_total 0"));
}
