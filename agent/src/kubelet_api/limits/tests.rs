use super::*;

#[test]
fn a_slot_is_given_back_when_dropped_and_refusals_are_counted() {
    let m = LimitMetrics::default();
    let slots = Slots::new(2, Limit::Streams, m.clone());
    let a = slots.take("streaming sessions").unwrap();
    let _b = slots.take("streaming sessions").unwrap();
    let refused = slots.take("streaming sessions").unwrap_err();
    assert!(refused.contains("at most 2"), "{refused}");
    assert_eq!(m.count(Limit::Streams), 1);
    drop(a);
    assert!(slots.take("streaming sessions").is_ok());
    assert_eq!(m.count(Limit::LogFollows), 0);
}

#[test]
fn every_limit_is_exposed() {
    let mut reg = Registry::default();
    let m = LimitMetrics::register(&mut reg);
    m.hit(Limit::Header);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &reg).unwrap();
    for l in Limit::ALL {
        let n = u8::from(l == Limit::Header);
        let line = format!(
            "tart_kubelet_kubelet_api_limited_total{{limit=\"{}\"}} {n}",
            l.as_str()
        );
        assert!(text.contains(&line), "missing {line} in\n{text}");
    }
}
