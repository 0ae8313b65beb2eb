use super::*;

#[test]
fn spread_takes_nearest_rank_percentiles_and_leaves_out_nans() {
    let v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
    let s = Spread::of(&v);
    assert_eq!(s.count, 100);
    assert_eq!(
        (s.min, s.p50, s.p90, s.p99, s.max),
        (Some(1.0), Some(50.0), Some(90.0), Some(99.0), Some(100.0))
    );
    let one = Spread::of(&[7.0, f64::NAN]);
    assert_eq!((one.count, one.p50, one.p99), (1, Some(7.0), Some(7.0)));
    assert_eq!(Spread::of(&[]), Spread::default());
}

#[test]
fn the_section_prints_every_figure_group() {
    let mut f = FleetReport {
        arrival_per_second: 4.0,
        slots: 200,
        ..FleetReport::default()
    };
    f.api.by_verb.insert("get".into(), 12.5);
    f.watch_delay_seconds = Spread::of(&[0.004, 0.006]);
    f.roll.image_to = "img:v2".into();
    f.roll.began_after_pods = Some(666);
    f.roll.completed = true;
    f.roll.duration_seconds = Some(80.0);
    let mut o = String::new();
    render(&mut o, &f);
    for want in [
        "fleet: 200 slots; arrivals 4.00/s asked",
        "by verb: get 12.50",
        "watch delay (bound -> agent's first request): min 4.0 p50 4.0 p90 6.0",
        "-> img:v2: cap 0, began after 666 Pods, completed in 80.0 s",
        "agents' rss: min -",
        "CPU over",
    ] {
        assert!(o.contains(want), "{want:?} not in\n{o}");
    }
}
