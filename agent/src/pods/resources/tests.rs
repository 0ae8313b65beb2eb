use super::*;
use k8s_openapi::api::core::v1::ResourceRequirements;

fn container(limits: &[(&str, &str)], requests: &[(&str, &str)]) -> Container {
    let map = |kv: &[(&str, &str)]| {
        (!kv.is_empty()).then(|| {
            kv.iter()
                .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
                .collect()
        })
    };
    Container {
        name: "vm".into(),
        resources: Some(ResourceRequirements {
            limits: map(limits),
            requests: map(requests),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn limits_win_over_requests() {
    let c = container(
        &[("cpu", "4"), ("memory", "8Gi")],
        &[("cpu", "1"), ("memory", "1Gi")],
    );
    let r = raw_resources(&c).unwrap().to_vm();
    assert_eq!(r.cpu, Some(4));
    assert_eq!(r.memory_mib, Some(8192));
    assert_eq!(r.disk_gb, None);
}

#[test]
fn requests_are_used_without_limits_and_round_up() {
    let c = container(
        &[],
        &[
            ("cpu", "1500m"),
            ("memory", "1000M"),
            ("ephemeral-storage", "60500M"),
        ],
    );
    let r = raw_resources(&c).unwrap().to_vm();
    assert_eq!(r.cpu, Some(2));
    assert_eq!(r.memory_mib, Some(954)); // 1e9 / 2^20 = 953.67
    assert_eq!(r.disk_gb, Some(61));
}

#[test]
fn tiny_cpu_gets_one_core() {
    let c = container(&[("cpu", "100m")], &[]);
    assert_eq!(raw_resources(&c).unwrap().to_vm().cpu, Some(1));
}

#[test]
fn no_resources_keep_image_values() {
    let c = Container::default();
    assert_eq!(raw_resources(&c).unwrap().to_vm(), VmResources::default());
}

#[test]
fn invalid_quantity_names_the_resource() {
    let c = container(&[("memory", "lots")], &[]);
    let e = raw_resources(&c).unwrap_err();
    assert_eq!(e.resource, "memory");
    assert_eq!(e.value, "lots");
}
