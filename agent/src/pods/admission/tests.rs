use super::*;
use crate::pods::fixtures::test_pod;
use serde_json::json;

const HOST: HostLimits = HostLimits {
    cpu_millis: 8000,
    memory_bytes: 16 << 30,
    disk_bytes: 500_000_000_000,
};

#[test]
fn a_plain_vm_pod_is_admitted() {
    let a = admit(&test_pod().build(), &HOST).unwrap();
    assert_eq!(a.container, "vm");
    assert_eq!(a.image.as_str(), "ghcr.io/cirruslabs/macos:15");
}

#[test]
fn two_containers_are_rejected_with_count() {
    let r = admit(&test_pod().containers(2).build(), &HOST).unwrap_err();
    assert_eq!(r.reason, RejectReason::ContainerCount);
    assert!(r.message.contains("exactly one container"), "{}", r.message);
    assert!(r.message.contains('2'));
}

#[test]
fn init_and_ephemeral_containers_are_rejected() {
    let r = admit(&test_pod().init_container().build(), &HOST).unwrap_err();
    assert_eq!(r.reason, RejectReason::InitContainers);
    let r = admit(&test_pod().ephemeral_container().build(), &HOST).unwrap_err();
    assert_eq!(r.reason, RejectReason::EphemeralContainers);
}

#[test]
fn unsupported_volume_types_are_rejected_naming_volume_and_type() {
    let cases = [
        (json!({"hostPath": {"path": "/data"}}), "hostPath"),
        (
            json!({"persistentVolumeClaim": {"claimName": "c"}}),
            "persistentVolumeClaim",
        ),
        (json!({"nfs": {"server": "s", "path": "/"}}), "nfs"),
        (json!({"csi": {"driver": "d"}}), "csi"),
        (json!({"ephemeral": {}}), "ephemeral"),
        (json!({"image": {"reference": "r"}}), "image"),
        (
            json!({"projected": {"sources": [{"clusterTrustBundle": {"path": "b"}}]}}),
            "projected.sources[0].clusterTrustBundle",
        ),
        (
            json!({"projected": {"sources": [{"configMap": {"name": "c"}},
                    {"podCertificate": {"signerName": "s", "keyType": "ED25519"}}]}}),
            "projected.sources[1].podCertificate",
        ),
    ];
    for (source, kind) in cases {
        let mut v = source;
        v["name"] = json!("data");
        let pod = test_pod().empty_dir("scratch").volume_json(v).build();
        let r = admit(&pod, &HOST).unwrap_err();
        assert_eq!(r.reason, RejectReason::Volume, "{kind}");
        assert!(r.message.contains("\"data\""), "{}", r.message);
        assert!(r.message.contains(&format!("({kind})")), "{}", r.message);
    }
}

#[test]
fn volumes_the_guest_is_given_are_admitted() {
    let pod = test_pod()
        .sa_token_volume()
        .empty_dir("scratch")
        .config_map_volume("cfg")
        .volume_json(json!({"name": "s", "secret": {"secretName": "s"}}))
        .volume_json(
            json!({"name": "d", "downwardAPI": {"items": [{"path": "labels",
                "fieldRef": {"fieldPath": "metadata.labels"}}]}}),
        )
        .volume_json(json!({"name": "p", "projected": {"sources": [
                {"secret": {"name": "s"}}, {"configMap": {"name": "c"}},
                {"downwardAPI": {}}, {"serviceAccountToken": {"path": "token"}}]}}))
        .build();
    assert_eq!(admit(&pod, &HOST).map(|a| a.container), Ok("vm".into()));
}

#[test]
fn a_config_map_volume_is_admitted() {
    assert!(admit(&test_pod().config_map_volume("cfg").build(), &HOST).is_ok());
}

#[test]
fn volume_devices_are_rejected_as_volume() {
    let pod = test_pod()
        .merge_container(json!({"volumeDevices": [{"name": "blk", "devicePath": "/dev/xvda"}]}))
        .build();
    let r = admit(&pod, &HOST).unwrap_err();
    assert_eq!(r.reason, RejectReason::Volume);
    assert!(r.message.contains("volumeDevices"), "{}", r.message);
    assert!(r.message.contains("\"blk\""), "{}", r.message);
}

#[test]
fn requests_beyond_the_host_are_rejected_per_resource() {
    let r = admit(&test_pod().limit("cpu", "9").build(), &HOST).unwrap_err();
    assert_eq!(
        (r.reason, r.reason.pod_reason()),
        (RejectReason::OutOfCpu, "OutOfcpu")
    );
    let r = admit(&test_pod().request("memory", "17Gi").build(), &HOST).unwrap_err();
    assert_eq!(r.reason, RejectReason::OutOfMemory);
    let pod = test_pod().request("ephemeral-storage", "600G").build();
    assert_eq!(
        admit(&pod, &HOST).unwrap_err().reason,
        RejectReason::OutOfDisk
    );
    assert!(admit(&test_pod().limit("cpu", "8").build(), &HOST).is_ok());
}

#[test]
fn local_or_hostile_image_is_invalid_image_name() {
    for img in ["macos-base", "ghcr.io/a/$(reboot)", ""] {
        let r = admit(&test_pod().image(img).build(), &HOST).unwrap_err();
        assert_eq!(r.reason, RejectReason::InvalidImage, "{img:?}");
        assert_eq!(r.reason.pod_reason(), "InvalidImageName");
    }
}

#[test]
fn bad_quantity_is_rejected() {
    let r = admit(&test_pod().limit("memory", "lots").build(), &HOST).unwrap_err();
    assert_eq!(r.reason, RejectReason::InvalidResources);
}

#[test]
fn an_unknown_launcher_mode_annotation_is_rejected_naming_the_modes() {
    let with = |v: &str| {
        let mut p = test_pod().build();
        p.metadata.annotations = Some(
            [("tart.run/guest-launcher".to_owned(), v.to_owned())]
                .into_iter()
                .collect(),
        );
        p
    };
    let r = admit(&with("sideload"), &HOST).unwrap_err();
    assert_eq!(r.reason, RejectReason::Annotation);
    assert_eq!(r.reason.pod_reason(), "InvalidAnnotation");
    assert_eq!(
        r.message,
        "annotation tart.run/guest-launcher: \"sideload\" is not a launcher mode (one of auto, baked, deliver)"
    );
    for ok in ["auto", "baked", "deliver"] {
        assert!(admit(&with(ok), &HOST).is_ok(), "{ok}");
    }
}
