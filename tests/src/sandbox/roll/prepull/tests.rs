use super::*;

#[test]
fn the_cap_is_the_smaller_limit_rounded_up_and_never_zero() {
    let p = Pacing {
        max_pulls: 2,
        max_percent: 50,
    };
    assert_eq!(p.cap(3), 2, "ceil(1.5) = 2");
    assert_eq!(p.cap(1), 1);
    assert_eq!(p.cap(10), 2);
    let p = Pacing {
        max_pulls: 5,
        max_percent: 25,
    };
    assert_eq!(p.cap(3), 1, "ceil(0.75) = 1");
    assert_eq!(p.cap(0), 1);
}

#[test]
fn the_config_names_the_image_for_the_runner_nodes_with_both_limits() {
    let v = config(
        "ghcr.io/acme/macos-runner:v2",
        &Pacing {
            max_pulls: 2,
            max_percent: 25,
        },
    );
    assert_eq!(
        v,
        json!({"images": [{"image": "ghcr.io/acme/macos-runner:v2",
                               "nodeSelector": {"type": "virtual-kubelet"}}],
                   "maxConcurrentPulls": 2, "maxConcurrentPercent": 25})
    );
}
