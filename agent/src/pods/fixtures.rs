//! Test fixtures: a chainable Pod builder (`test_pod().image("…").deleting(30)`) and a
//! [`Rig`]: the Pod side's contexts around `MemTart`.

use k8s_openapi::{
    api::core::v1::{
        ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EphemeralContainer,
        HostPathVolumeSource, Pod, PodSpec, ResourceRequirements, SecretVolumeSource, Volume,
        VolumeMount,
    },
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::Time},
    jiff::Timestamp,
};
use std::{sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{api::ObjectMeta, runtime::reflector::ObjectRef};
use prometheus_client::{metrics::gauge::Gauge, registry::Registry};
use tart::testing::MemTart;
use tokio::sync::{mpsc, watch};

use super::{
    context::{NodeView, PodsConfig, Shared},
    events::{Occurrence, spec},
    metrics::PodMetrics,
    sink::EventSink,
    worker::{Waker, WorkerConfig, WorkerContext},
};
use crate::vm_name::VmNaming;
use crate::{
    guest_contract::{layout::GuestLayout, prepare::GuestSettings},
    images::{goldens::Goldens, metrics::ImageMetrics},
    node::health::HostHealth,
    slots::VmSlots,
};

pub(crate) const UID: &str = "3f2c1a9e-5b7d-4e21-9a0b-c1d2e3f4a5b6";

pub(crate) struct PodBuilder(Pod);

pub(crate) fn test_pod() -> PodBuilder {
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
    pub(crate) fn build(self) -> Pod {
        self.0
    }
    fn spec(&mut self) -> &mut PodSpec {
        self.0.spec.as_mut().unwrap()
    }
    fn c(&mut self) -> &mut Container {
        &mut self.spec().containers[0]
    }
    pub(crate) fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.into());
        self
    }
    pub(crate) fn containers(mut self, n: usize) -> Self {
        let c = self.c().clone();
        self.spec().containers = (0..n)
            .map(|i| Container {
                name: format!("c{i}"),
                ..c.clone()
            })
            .collect();
        self
    }
    pub(crate) fn image(mut self, img: &str) -> Self {
        self.c().image = Some(img.into());
        self
    }
    pub(crate) fn pull_policy(mut self, p: &str) -> Self {
        self.c().image_pull_policy = Some(p.into());
        self
    }
    pub(crate) fn restart_policy(mut self, p: &str) -> Self {
        self.spec().restart_policy = Some(p.into());
        self
    }
    pub(crate) fn init_container(mut self) -> Self {
        self.spec().init_containers = Some(vec![Container {
            name: "init".into(),
            ..Default::default()
        }]);
        self
    }
    pub(crate) fn ephemeral_container(mut self) -> Self {
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
    pub(crate) fn host_path_volume(self, name: &str) -> Self {
        self.volume(Volume {
            name: name.into(),
            host_path: Some(HostPathVolumeSource {
                path: "/data".into(),
                ..Default::default()
            }),
            ..Default::default()
        })
    }
    pub(crate) fn config_map_volume(self, name: &str) -> Self {
        self.volume(Volume {
            name: name.into(),
            config_map: Some(ConfigMapVolumeSource {
                name: "cfg".into(),
                ..Default::default()
            }),
            ..Default::default()
        })
    }
    pub(crate) fn empty_dir(self, name: &str) -> Self {
        self.volume(Volume {
            name: name.into(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Default::default()
        })
    }
    pub(crate) fn sa_token_volume(mut self) -> Self {
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
    pub(crate) fn limit(self, k: &str, v: &str) -> Self {
        self.resource(true, k, v)
    }
    pub(crate) fn request(self, k: &str, v: &str) -> Self {
        self.resource(false, k, v)
    }
    pub(crate) fn finalizer(mut self, f: &str) -> Self {
        self.0
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(f.into());
        self
    }
    pub(crate) fn deleting(mut self, grace: i64) -> Self {
        self.0.metadata.deletion_timestamp =
            Some(Time(Timestamp::from_second(1_700_000_100).unwrap()));
        self.0.metadata.deletion_grace_period_seconds = Some(grace);
        self
    }
    pub(crate) fn phase(mut self, p: &str) -> Self {
        self.0.status.get_or_insert_with(Default::default).phase = Some(p.into());
        self
    }
    /// Deep-merges `patch` (JSON names) into the spec: objects merge, anything else replaces.
    pub(crate) fn merge_spec(mut self, patch: serde_json::Value) -> Self {
        let spec = self.spec();
        *spec = merged(&*spec, patch);
        self
    }
    /// Deep-merges `patch` into the first container, as [`PodBuilder::merge_spec`].
    pub(crate) fn merge_container(mut self, patch: serde_json::Value) -> Self {
        let c = self.c();
        *c = merged(&*c, patch);
        self
    }
    /// Adds a volume given as JSON (`{"name": …, "<type>": {…}}`).
    pub(crate) fn volume_json(self, v: serde_json::Value) -> Self {
        self.volume(serde_json::from_value(v).expect("a Volume"))
    }
    pub(crate) fn pull_secret(mut self, name: &str) -> Self {
        self.spec()
            .image_pull_secrets
            .get_or_insert_with(Vec::new)
            .push(k8s_openapi::api::core::v1::LocalObjectReference { name: name.into() });
        self
    }
}

fn merged<T: serde::Serialize + serde::de::DeserializeOwned>(
    value: &T,
    patch: serde_json::Value,
) -> T {
    fn merge(into: &mut serde_json::Value, patch: serde_json::Value) {
        match (into, patch) {
            (serde_json::Value::Object(into), serde_json::Value::Object(patch)) => {
                for (k, v) in patch {
                    merge(into.entry(k).or_insert(serde_json::Value::Null), v);
                }
            }
            (into, patch) => *into = patch,
        }
    }
    let mut v = serde_json::to_value(value).expect("serializable");
    merge(&mut v, patch);
    serde_json::from_value(v).expect("a valid patch")
}

/// A Pod side with `MemTart` and no API server behind its client: events go to a channel,
/// wake-ups to another, metrics to a registry of its own.
pub(crate) struct Rig {
    pub worker: Arc<WorkerContext<MemTart>>,
    pub tart: MemTart,
    pub events: mpsc::UnboundedReceiver<(ObjectReference, Occurrence)>,
    pub wakes: futures::channel::mpsc::UnboundedReceiver<ObjectRef<Pod>>,
    pub registry: Registry,
    /// The guest directories of this rig's VMs (removed with the rig).
    pub _guest_dir: Arc<tempfile::TempDir>,
}

/// A client whose requests can never succeed (nothing listens on port 9).
pub(crate) fn offline_client() -> kube::Client {
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let origin = crate::kube_client::Origin::inferred();
    crate::kube_client::client(&config, origin).expect("client")
}

pub(crate) fn rig(tart: MemTart, slots: u32) -> Rig {
    rig_with_client(tart, slots, offline_client())
}

pub(crate) fn rig_with_client(tart: MemTart, slots: u32, client: kube::Client) -> Rig {
    let mut registry = Registry::default();
    let metrics = PodMetrics::register(&mut registry);
    let (tx, events) = mpsc::unbounded_channel();
    let (wake_tx, wakes) = futures::channel::mpsc::unbounded();
    let guest_dir = Arc::new(tempfile::tempdir().expect("tempdir"));
    let cfg = WorkerConfig {
        vm_log_dir: std::env::temp_dir(),
        vm_log_cap_bytes: 1 << 20,
        run_start_window: Duration::from_millis(10),
        ip_wait: Duration::from_secs(1),
        read_pull_secrets: false,
        api_timeout: Duration::from_secs(1),
        pod_log_dir: guest_dir.path().join("pod-logs"),
        launcher: crate::config::LauncherMode::Auto,
        launcher_timeout: Duration::from_secs(5),
        guest: GuestSettings {
            layout: GuestLayout::new(guest_dir.path().to_path_buf()),
            node_name: "mac-1".into(),
            host_ip: "192.0.2.10".into(),
            api_timeout: Duration::from_secs(1),
            token_refresh_max: Duration::from_secs(24 * 3600),
        },
    };
    let worker = Arc::new(WorkerContext {
        client,
        tart: Arc::new(tart.clone()),
        cfg,
        slots: VmSlots::new(slots, Gauge::default()),
        health: HostHealth::new(1, Duration::from_secs(600)),
        metrics,
        events: EventSink::with_sender(tx),
        log_watch: crate::container_logs::LogWatch::polling(Default::default()),
        pulls: Default::default(),
        goldens: Goldens::new(crate::VM_NAME_PREFIX),
        image_metrics: ImageMetrics::default(),
        pacer: None,
        waker: Waker::new(wake_tx),
        vitals: crate::vitals::Vitals::off(Default::default()),
        running: Default::default(),
    });
    Rig {
        worker,
        tart,
        events,
        wakes,
        registry,
        _guest_dir: guest_dir,
    }
}

impl Rig {
    /// The controller's context around this rig's worker context.
    pub(crate) fn shared(&self, node: NodeView) -> Arc<Shared<MemTart>> {
        Arc::new(Shared {
            client: self.worker.client.clone(),
            cfg: PodsConfig {
                node_name: "mac-1".into(),
                host_ip: "192.0.2.10".into(),
                default_grace: Duration::from_secs(5),
                api_timeout: Duration::from_secs(1),
                concurrency: 4,
                gc_interval: Duration::from_secs(60),
                without_finalizer: false,
                vm_profiles: Default::default(),
                host_check_interval: Duration::from_secs(30),
            },
            classes: crate::pods::profile::classes::RuntimeClasses::new(
                &kube::runtime::reflector::store::Writer::default(),
            ),
            worker: self.worker.clone(),
            naming: VmNaming::default(),
            node: watch::channel(node).1,
            workers: Default::default(),
            api_failures: Default::default(),
            api_errors: Default::default(),
            // Held for longer than any test runs, paused clocks included.
            lease: crate::node::fence::Fence::held(Duration::from_secs(86_400)),
        })
    }

    /// The event reasons published so far, in order.
    pub(crate) fn reasons(&mut self) -> Vec<String> {
        let mut v = vec![];
        while let Ok((_, o)) = self.events.try_recv() {
            v.push(spec(&o).reason);
        }
        v
    }

    /// The registry's text exposition.
    pub(crate) fn metrics(&self) -> String {
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, &self.registry).unwrap();
        s
    }
}
