//! Test fixtures: a chainable Pod builder (`test_pod().image("…").deleting(30)`).

use k8s_openapi::{
    api::core::v1::{
        ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EphemeralContainer,
        HostPathVolumeSource, Pod, PodSpec, ResourceRequirements, SecretVolumeSource, Volume,
        VolumeMount,
    },
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Time},
    jiff::Timestamp,
};
use kube::api::ObjectMeta;

pub const UID: &str = "3f2c1a9e-5b7d-4e21-9a0b-c1d2e3f4a5b6";

pub struct PodBuilder(Pod);

pub fn test_pod() -> PodBuilder {
    PodBuilder(Pod {
        metadata: ObjectMeta {
            name: Some("runner".into()),
            namespace: Some("ci".into()),
            uid: Some(UID.into()),
            creation_timestamp: Some(Time(Timestamp::from_second(1_700_000_000).unwrap())),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some("mac-1".into()),
            containers: vec![Container {
                name: "vm".into(),
                image: Some("ghcr.io/cirruslabs/macos:15".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    })
}

#[allow(dead_code)]
impl PodBuilder {
    pub fn build(self) -> Pod {
        self.0
    }
    fn spec(&mut self) -> &mut PodSpec {
        self.0.spec.as_mut().unwrap()
    }
    fn c(&mut self) -> &mut Container {
        &mut self.spec().containers[0]
    }
    pub fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.into());
        self
    }
    pub fn containers(mut self, n: usize) -> Self {
        let c = self.c().clone();
        self.spec().containers = (0..n)
            .map(|i| Container {
                name: format!("c{i}"),
                ..c.clone()
            })
            .collect();
        self
    }
    pub fn image(mut self, img: &str) -> Self {
        self.c().image = Some(img.into());
        self
    }
    pub fn pull_policy(mut self, p: &str) -> Self {
        self.c().image_pull_policy = Some(p.into());
        self
    }
    pub fn restart_policy(mut self, p: &str) -> Self {
        self.spec().restart_policy = Some(p.into());
        self
    }
    pub fn init_container(mut self) -> Self {
        self.spec().init_containers = Some(vec![Container {
            name: "init".into(),
            ..Default::default()
        }]);
        self
    }
    pub fn ephemeral_container(mut self) -> Self {
        self.spec().ephemeral_containers = Some(vec![EphemeralContainer {
            name: "debug".into(),
            ..Default::default()
        }]);
        self
    }
    fn volume(mut self, v: Volume) -> Self {
        self.spec().volumes.get_or_insert_with(Vec::new).push(v);
        self
    }
    pub fn host_path_volume(self, name: &str) -> Self {
        self.volume(Volume {
            name: name.into(),
            host_path: Some(HostPathVolumeSource {
                path: "/data".into(),
                ..Default::default()
            }),
            ..Default::default()
        })
    }
    pub fn config_map_volume(self, name: &str) -> Self {
        self.volume(Volume {
            name: name.into(),
            config_map: Some(ConfigMapVolumeSource {
                name: "cfg".into(),
                ..Default::default()
            }),
            ..Default::default()
        })
    }
    pub fn empty_dir(self, name: &str) -> Self {
        self.volume(Volume {
            name: name.into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        })
    }
    pub fn sa_token_volume(mut self) -> Self {
        self.c()
            .volume_mounts
            .get_or_insert_with(Vec::new)
            .push(VolumeMount {
                name: "default-token-abcde".into(),
                mount_path: "/var/run/secrets/kubernetes.io/serviceaccount".into(),
                read_only: Some(true),
                ..Default::default()
            });
        self.volume(Volume {
            name: "default-token-abcde".into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some("default-token-abcde".into()),
                ..Default::default()
            }),
            ..Default::default()
        })
    }
    fn resource(mut self, limits: bool, k: &str, v: &str) -> Self {
        let r = self
            .c()
            .resources
            .get_or_insert_with(ResourceRequirements::default);
        let m = if limits {
            &mut r.limits
        } else {
            &mut r.requests
        };
        m.get_or_insert_with(Default::default)
            .insert(k.into(), Quantity(v.into()));
        self
    }
    pub fn limit(self, k: &str, v: &str) -> Self {
        self.resource(true, k, v)
    }
    pub fn request(self, k: &str, v: &str) -> Self {
        self.resource(false, k, v)
    }
    pub fn finalizer(mut self, f: &str) -> Self {
        self.0
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(f.into());
        self
    }
    pub fn deleting(mut self, grace: i64) -> Self {
        self.0.metadata.deletion_timestamp =
            Some(Time(Timestamp::from_second(1_700_000_100).unwrap()));
        self.0.metadata.deletion_grace_period_seconds = Some(grace);
        self
    }
    pub fn phase(mut self, p: &str) -> Self {
        self.0.status.get_or_insert_with(Default::default).phase = Some(p.into());
        self
    }
    pub fn pull_secret(mut self, name: &str) -> Self {
        self.spec()
            .image_pull_secrets
            .get_or_insert_with(Vec::new)
            .push(k8s_openapi::api::core::v1::LocalObjectReference { name: name.into() });
        self
    }
}
