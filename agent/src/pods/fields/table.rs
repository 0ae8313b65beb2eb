//! The treatment of every field of a Pod's spec, one table per Kubernetes type, in the fields'
//! JSON names (k8s-openapi's `v1_37` types). `docs/pods.md` ("Every Pod field") shows the same
//! tables; a unit test holds code, docs and the types' own field lists together.

/// What the agent does with one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Treatment {
    /// Carried into the VM or acted on by the agent.
    Honoured,
    /// A Pod that sets it (a list: with items) is rejected at admission.
    Rejected,
    /// Accepted but not honoured: reported by `ignored_fields` unless it holds a baseline
    /// value.
    Warned(Baseline),
    /// Used by the scheduler or the control plane before the Pod reaches this node.
    Scheduler,
    /// Means nothing for a VM, or is informational; never reported.
    NotApplicable,
    /// An object (or a list of them) whose own fields are treated by the nested table.
    Partly(&'static [Field]),
}

/// The values of a warned field that warn nothing: its unset forms and what the API server
/// defaults it to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Baseline {
    /// Absent, null, `false`, `""`, `[]`, or an object whose fields are all such.
    Empty,
    /// Absent, null, or one of these strings.
    One(&'static [&'static str]),
    /// Absent, null or `true` (a field that defaults to true).
    True,
}

/// One field of a Kubernetes type, by its JSON name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    /// The JSON name (`livenessProbe`).
    pub name: &'static str,
    /// What the agent does with it.
    pub treatment: Treatment,
}

use Baseline::{Empty, One, True};
use Treatment::{Honoured, NotApplicable, Partly, Rejected, Scheduler, Warned};

const fn f(name: &'static str, treatment: Treatment) -> Field {
    Field { name, treatment }
}

/// `PodSpec`.
pub(crate) const POD_SPEC: &[Field] = &[
    f("activeDeadlineSeconds", Honoured),
    f("affinity", Scheduler),
    f("automountServiceAccountToken", Honoured),
    f("containers", Partly(CONTAINER)),
    f("dnsConfig", Warned(Empty)),
    // The guest gets the Mac's resolver through Tart's NAT DHCP: that is `Default`, and the
    // usual `ClusterFirst` cannot be honoured on any Pod (cluster DNS is not routable from a
    // guest), so neither is worth a warning; the other two policies are.
    f("dnsPolicy", Warned(One(&["ClusterFirst", "Default"]))),
    // Defaulted to true on every Pod; cluster Service IPs are not routable from a VM guest, so
    // the service variables are never injected (documented rather than warned on every Pod).
    f("enableServiceLinks", NotApplicable),
    f("ephemeralContainers", Rejected),
    f("evictionResponders", NotApplicable),
    f("hostAliases", Warned(Empty)),
    f("hostIPC", Warned(Empty)),
    f("hostNetwork", Warned(Empty)),
    f("hostPID", Warned(Empty)),
    f("hostUsers", Warned(True)),
    f("hostname", Warned(Empty)),
    f("hostnameOverride", Warned(Empty)),
    f("imagePullSecrets", Honoured),
    f("initContainers", Rejected),
    f("nodeName", Scheduler),
    f("nodeSelector", Scheduler),
    f("os", Warned(Empty)),
    f("overhead", Scheduler),
    f("preemptionPolicy", Scheduler),
    f("priority", Scheduler),
    f("priorityClassName", Scheduler),
    f("readinessGates", Honoured),
    f("resourceClaims", Warned(Empty)),
    f("resources", Warned(Empty)),
    f("restartPolicy", Honoured),
    f("runtimeClassName", Honoured),
    f("schedulerName", Scheduler),
    f("schedulingGates", Scheduler),
    f("schedulingGroup", Scheduler),
    f("securityContext", Partly(POD_SECURITY_CONTEXT)),
    f("serviceAccount", Honoured),
    f("serviceAccountName", Honoured),
    f("setHostnameAsFQDN", Warned(Empty)),
    f("shareProcessNamespace", Warned(Empty)),
    f("subdomain", Warned(Empty)),
    f("terminationGracePeriodSeconds", Honoured),
    f("tolerations", Scheduler),
    f("topologySpreadConstraints", Scheduler),
    f("volumes", Partly(VOLUME)),
];

/// `Container`.
pub(crate) const CONTAINER: &[Field] = &[
    f("args", Honoured),
    f("command", Honoured),
    f("env", Honoured),
    f("envFrom", Honoured),
    f("image", Honoured),
    f("imagePullPolicy", Honoured),
    f("lifecycle", Partly(LIFECYCLE)),
    f("livenessProbe", Partly(PROBE)),
    f("name", Honoured),
    f("ports", Partly(CONTAINER_PORT)),
    f("readinessProbe", Partly(PROBE)),
    f("resizePolicy", Partly(CONTAINER_RESIZE_POLICY)),
    f("resources", Partly(RESOURCE_REQUIREMENTS)),
    f("restartPolicy", Warned(Empty)),
    f("restartPolicyRules", Warned(Empty)),
    f("securityContext", Partly(SECURITY_CONTEXT)),
    f("startupProbe", Partly(PROBE)),
    f("stdin", Honoured),
    f("stdinOnce", Honoured),
    f("terminationMessagePath", Honoured),
    f("terminationMessagePolicy", Honoured),
    f("tty", Warned(Empty)),
    f("volumeDevices", Rejected),
    f("volumeMounts", Partly(VOLUME_MOUNT)),
    f("workingDir", Honoured),
];

/// `Probe` (liveness, readiness, startup): run from the Mac (`httpGet`, `tcpSocket`) or in the
/// guest through `tart exec` (`exec`); admission rejects a `grpc` probe.
pub(crate) const PROBE: &[Field] = &[
    f("exec", Honoured),
    f("failureThreshold", Honoured),
    f("grpc", Rejected),
    f("httpGet", Honoured),
    f("initialDelaySeconds", Honoured),
    f("periodSeconds", Honoured),
    f("successThreshold", Honoured),
    f("tcpSocket", Honoured),
    f("terminationGracePeriodSeconds", Honoured),
    f("timeoutSeconds", Honoured),
];

/// `Lifecycle`: the hooks run with kubelet's semantics; the stop is always Tart's graceful
/// shutdown request, so there is no signal to choose.
pub(crate) const LIFECYCLE: &[Field] = &[
    f("postStart", Honoured),
    f("preStop", Honoured),
    f("stopSignal", Warned(Empty)),
];

/// `ContainerPort`. kubelet itself ignores `containerPort` (it only documents the port), so
/// only a port on the host warns.
pub(crate) const CONTAINER_PORT: &[Field] = &[
    f("containerPort", NotApplicable),
    f("hostIP", Warned(Empty)),
    f("hostPort", Warned(Empty)),
    f("name", NotApplicable),
    f("protocol", NotApplicable),
];

/// `ContainerResizePolicy`. Newer API servers default `NotRequired` for cpu and memory, so
/// only a policy that asks for a restart warns.
pub(crate) const CONTAINER_RESIZE_POLICY: &[Field] = &[
    f("resourceName", NotApplicable),
    f("restartPolicy", Warned(One(&["NotRequired"]))),
];

/// `ResourceRequirements` of the container.
pub(crate) const RESOURCE_REQUIREMENTS: &[Field] = &[
    f("claims", Warned(Empty)),
    f("limits", Honoured),
    f("requests", Honoured),
];

/// The container's `SecurityContext`.
pub(crate) const SECURITY_CONTEXT: &[Field] = &[
    f("allowPrivilegeEscalation", Warned(True)),
    f("appArmorProfile", Warned(Empty)),
    f("capabilities", Warned(Empty)),
    f("privileged", Warned(Empty)),
    f("procMount", Warned(One(&["Default"]))),
    f("readOnlyRootFilesystem", Warned(Empty)),
    f("runAsGroup", Warned(Empty)),
    f("runAsNonRoot", Warned(Empty)),
    f("runAsUser", Honoured),
    f("seLinuxOptions", Warned(Empty)),
    f("seccompProfile", Warned(Empty)),
    f("windowsOptions", Warned(Empty)),
];

/// `PodSecurityContext`. `runAsUser` is the container's default user.
pub(crate) const POD_SECURITY_CONTEXT: &[Field] = &[
    f("appArmorProfile", Warned(Empty)),
    f("fsGroup", Warned(Empty)),
    f("fsGroupChangePolicy", Warned(Empty)),
    f("runAsGroup", Warned(Empty)),
    f("runAsNonRoot", Warned(Empty)),
    f("runAsUser", Honoured),
    f("seLinuxChangePolicy", Warned(Empty)),
    f("seLinuxOptions", Warned(Empty)),
    f("seccompProfile", Warned(Empty)),
    f("supplementalGroups", Warned(Empty)),
    f("supplementalGroupsPolicy", Warned(Empty)),
    f("sysctls", Warned(Empty)),
    f("windowsOptions", Warned(Empty)),
];

/// `VolumeMount`.
pub(crate) const VOLUME_MOUNT: &[Field] = &[
    f("bindMountOptions", Warned(Empty)),
    f("mountPath", Honoured),
    f("mountPropagation", Warned(One(&["None"]))),
    f("name", Honoured),
    f("readOnly", Honoured),
    f("recursiveReadOnly", Warned(One(&["Disabled"]))),
    f("subPath", Honoured),
    f("subPathExpr", Honoured),
];

/// `Volume`: its `name` and one field per volume type.
pub(crate) const VOLUME: &[Field] = &[
    f("awsElasticBlockStore", Rejected),
    f("azureDisk", Rejected),
    f("azureFile", Rejected),
    f("cephfs", Rejected),
    f("cinder", Rejected),
    f("configMap", Honoured),
    f("csi", Rejected),
    f("downwardAPI", Honoured),
    f("emptyDir", Partly(EMPTY_DIR_VOLUME_SOURCE)),
    f("ephemeral", Rejected),
    f("fc", Rejected),
    f("flexVolume", Rejected),
    f("flocker", Rejected),
    f("gcePersistentDisk", Rejected),
    f("gitRepo", Rejected),
    f("glusterfs", Rejected),
    f("hostPath", Rejected),
    f("image", Rejected),
    f("iscsi", Rejected),
    f("name", Honoured),
    f("nfs", Rejected),
    f("persistentVolumeClaim", Rejected),
    f("photonPersistentDisk", Rejected),
    f("portworxVolume", Rejected),
    f("projected", Partly(PROJECTED_VOLUME_SOURCE)),
    f("quobyte", Rejected),
    f("rbd", Rejected),
    f("scaleIO", Rejected),
    f("secret", Honoured),
    f("storageos", Rejected),
    f("vsphereVolume", Rejected),
];

/// `EmptyDirVolumeSource`: the directory lives on the Mac's disk, shared into the guest.
pub(crate) const EMPTY_DIR_VOLUME_SOURCE: &[Field] = &[
    f("medium", Warned(One(&[""]))),
    f("mode", Warned(Empty)),
    f("sizeLimit", Warned(Empty)),
];

/// `ProjectedVolumeSource`.
pub(crate) const PROJECTED_VOLUME_SOURCE: &[Field] = &[
    f("defaultMode", Honoured),
    f("defaultUser", Warned(Empty)),
    f("sources", Partly(VOLUME_PROJECTION)),
];

/// `VolumeProjection`: one source of a projected volume.
pub(crate) const VOLUME_PROJECTION: &[Field] = &[
    f("clusterTrustBundle", Rejected),
    f("configMap", Honoured),
    f("downwardAPI", Honoured),
    f("podCertificate", Rejected),
    f("secret", Honoured),
    f("serviceAccountToken", Honoured),
];
