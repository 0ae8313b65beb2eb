//! [`Config::resolve`]: merged [`RunArgs`] -> validated [`Config`]. Pure.
//!
//! Every value is already typed and checked on its own by the time it gets here (flags and
//! environment by clap, the file by serde, both with the parsers in [`super::values`]). This
//! file fills in the built-in defaults and then checks each section's settings against each
//! other; the first problem found is the error.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    time::Duration,
};

use super::{
    Config, ConfigError, DiskThreshold, HostDefaults, Limits, RunArgs, TaintSpec, VmProfiles,
    profiles, units,
};
use crate::vm_name::{DEFAULT_PREFIX, VmNaming};

impl Config {
    /// Fill in the defaults of settings not given and validate. Pure.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the setting.
    pub(crate) fn resolve(mut a: RunArgs, host: &HostDefaults) -> Result<Self, ConfigError> {
        let naming = vm_naming(a.vm_name_prefix.as_deref().unwrap_or(DEFAULT_PREFIX))?;
        let profiles = profiles::resolve(
            a.vm_profiles.take().unwrap_or_default(),
            a.default_vm_profile.take(),
        )
        .map_err(profile_error)?;
        let cfg = with_defaults(a, host, naming, profiles);
        check_identity(&cfg)?;
        check_capacity(&cfg)?;
        check_heartbeat(&cfg)?;
        check_tart(&cfg)?;
        check_pods(&cfg)?;
        check_kubelet_api(&cfg)?;
        Ok(cfg)
    }
}

/// The configuration's error for a bad VM profile.
fn profile_error(e: profiles::ProfileError) -> ConfigError {
    match e {
        profiles::ProfileError::Field {
            profile,
            field,
            message,
        } => ConfigError::Profile {
            profile,
            field,
            message,
        },
        profiles::ProfileError::NoSuchDefault(d) => ConfigError::Invalid {
            setting: "default_vm_profile",
            message: format!("no [vm_profiles.{d}] table defines profile {d:?}"),
        },
    }
}

/// `a`'s values where given, else the built-in defaults (the ones `--help` states), with
/// `vm_naming` built from the checked prefix and the checked `vm_profiles`.
fn with_defaults(
    a: RunArgs,
    host: &HostDefaults,
    vm_naming: VmNaming,
    vm_profiles: VmProfiles,
) -> Config {
    let secs = Duration::from_secs;
    let port = Limits::default();
    // A value without exactly one '/' leaves the namespace empty, which the checks refuse.
    let prepull = match a.prepull_config.as_deref().map(|v| v.split_once('/')) {
        None => ("tart-kubelet".to_owned(), "tart-kubelet-prepull".to_owned()),
        Some(Some((ns, name))) if !name.contains('/') => (ns.to_owned(), name.to_owned()),
        Some(_) => (String::new(), a.prepull_config.clone().unwrap_or_default()),
    };
    Config {
        // Node identity.
        kubeconfig: a.kubeconfig,
        bootstrap_kubeconfig: a.bootstrap_kubeconfig,
        node_name: a.node_name.unwrap_or_else(|| host.hostname.clone()),
        node_labels: a
            .node_labels
            .into_iter()
            .flatten()
            .map(|l| (l.key, l.value))
            .collect(),
        taint: a.taint.map_or_else(default_taint, |t| t.0),
        // Tart.
        tart_program: a.tart_program.unwrap_or_else(|| "tart".into()),
        tart_home: a.tart_home.unwrap_or_else(|| host.home.join(".tart")),
        vm_log_dir: a
            .vm_log_dir
            .unwrap_or_else(|| host.home.join(".tart-kubelet").join("vm-logs")),
        guest_dir: a
            .guest_dir
            .unwrap_or_else(|| host.home.join(".tart-kubelet").join("guest")),
        pod_log_dir: a
            .pod_log_dir
            .unwrap_or_else(|| host.home.join(".tart-kubelet").join("pod-logs")),
        min_tart_version: a.min_tart_version.unwrap_or((2, 20, 0)),
        tart_deadlines: a
            .tart_deadlines
            .into_iter()
            .flatten()
            .map(|d| (d.op, d.deadline))
            .collect(),
        tart_attempts: a.tart_attempts.unwrap_or(3),
        pull_stall_window: a.pull_stall_window.unwrap_or(secs(600)),
        run_start_window: a.run_start_window.unwrap_or(secs(5)),
        ip_wait: a.ip_wait.unwrap_or(secs(180)),
        guest_launcher: a.guest_launcher.unwrap_or_default(),
        guest_launcher_timeout: a.guest_launcher_timeout.unwrap_or(secs(120)),
        // Logging and the admin endpoint.
        log_file: a.log_file,
        log_format: a.log_format.unwrap_or_default(),
        log_filter: a.log_filter.unwrap_or_else(|| "info,kube=warn".into()),
        admin_addr: a
            .admin_addr
            .unwrap_or(SocketAddr::from((Ipv4Addr::LOCALHOST, 10255))),
        // The kubelet API.
        kubelet_port: a.kubelet_port.unwrap_or(10250),
        kubelet_address: a
            .kubelet_address
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        node_ip: a.node_ip,
        tls_cert_file: a.tls_cert_file,
        tls_private_key_file: a.tls_private_key_file,
        client_ca_file: a.client_ca_file,
        cert_dir: a
            .cert_dir
            .unwrap_or_else(|| host.home.join(".tart-kubelet").join("pki")),
        // The port's limits: `Limits::default()` holds their defaults.
        kubelet_api_limits: Limits {
            handshake: a.kubelet_api_handshake_timeout.unwrap_or(port.handshake),
            header: a.kubelet_api_header_timeout.unwrap_or(port.header),
            max_connections: a
                .kubelet_api_max_connections
                .unwrap_or(port.max_connections),
            max_streams: a.kubelet_api_max_streams.unwrap_or(port.max_streams),
            max_log_follows: a
                .kubelet_api_max_log_follows
                .unwrap_or(port.max_log_follows),
            streaming_idle: a
                .streaming_connection_idle_timeout
                .unwrap_or(port.streaming_idle),
        },
        // Capacity and pressure.
        vm_slots: a.vm_slots.unwrap_or(2),
        max_pods: a.max_pods.or(a.vm_slots).unwrap_or(2),
        memory_reserve_bytes: a.memory_reserve.unwrap_or(4 << 30),
        cpu_override: a.cpu,
        memory_override_bytes: a.memory,
        storage_override_bytes: a.ephemeral_storage,
        disk_pressure: a.disk_pressure_free.unwrap_or(DiskThreshold::Percent(10.0)),
        memory_pressure_bytes: a.memory_pressure_available.unwrap_or(512 << 20),
        // Node heartbeat.
        lease_duration: a.lease_duration.unwrap_or(secs(40)),
        lease_renew_interval: a.lease_renew_interval.unwrap_or(secs(10)),
        node_status_check_interval: a.node_status_check_interval.unwrap_or(secs(10)),
        node_status_report_interval: a.node_status_report_interval.unwrap_or(secs(300)),
        host_check_interval: a.host_check_interval.unwrap_or(secs(10)),
        host_checks_file: a.host_checks_file,
        softnet_program: a.softnet_program,
        vm_profiles,
        quarantine_faults: a.quarantine_faults.unwrap_or(3),
        quarantine_window: a.quarantine_window.unwrap_or(secs(600)),
        quarantine_cooldown: a.quarantine_cooldown.unwrap_or(secs(900)),
        api_timeout: a.api_timeout.unwrap_or(secs(10)),
        // Pods.
        default_termination_grace: a.default_termination_grace.unwrap_or(secs(30)),
        pull_credentials: a.pull_credentials.unwrap_or_default(),
        vm_naming,
        pod_concurrency: a.pod_concurrency.unwrap_or(8),
        identity: a.identity.unwrap_or_default(),
        token_refresh_max: a.token_refresh_max.unwrap_or(secs(24 * 3600)),
        image_gc_high_threshold: a.image_gc_high_threshold.unwrap_or(85),
        image_gc_low_threshold: a.image_gc_low_threshold.unwrap_or(80),
        image_cache_budget: a.image_cache_budget,
        image_gc_period: a.image_gc_period.unwrap_or(secs(60)),
        prepull_namespace: prepull.0,
        prepull_name: prepull.1,
        prepull_period: a.prepull_period.unwrap_or(secs(60)),
        vitals_interval: a.vitals_interval.unwrap_or(secs(10)),
        vitals_host_file: a.vitals_host_file,
    }
}

/// `virtual-kubelet.io/provider=tart:NoSchedule`, the virtual-kubelet convention: only Pods
/// that tolerate it land on this Node.
fn default_taint() -> Option<TaintSpec> {
    Some(TaintSpec {
        key: "virtual-kubelet.io/provider".into(),
        value: "tart".into(),
        effect: "NoSchedule".into(),
    })
}

/// `Ok` when `ok`, else [`ConfigError::Invalid`] for `setting`.
fn ensure(ok: bool, setting: &'static str, message: impl Into<String>) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::Invalid {
            setting,
            message: message.into(),
        })
    }
}

/// The node name, which may come from the host name rather than from a setting; the TLS
/// bootstrap, which makes node credentials and writes them to an explicit --kubeconfig.
fn check_identity(c: &Config) -> Result<(), ConfigError> {
    let name = &c.node_name;
    ensure(
        units::is_dns_subdomain(name),
        "--node-name",
        format!("{name:?} is not a lowercase RFC 1123 name (a-z, 0-9, '-', '.')"),
    )?;
    let Some(boot) = &c.bootstrap_kubeconfig else {
        return Ok(());
    };
    ensure(
        c.identity == super::Identity::Node,
        "--bootstrap-kubeconfig",
        "needs --identity node: the certificate it requests is system:node:<node-name>",
    )?;
    ensure(
        c.kubeconfig.is_some(),
        "--bootstrap-kubeconfig",
        "needs --kubeconfig: the file the issued credentials are written to",
    )?;
    ensure(
        c.kubeconfig.as_ref() != Some(boot),
        "--bootstrap-kubeconfig",
        "must differ from --kubeconfig, which is overwritten with the issued credentials",
    )
}

fn check_capacity(c: &Config) -> Result<(), ConfigError> {
    let (slots, max_pods) = (c.vm_slots, c.max_pods);
    ensure(
        (1..=64).contains(&slots),
        "--vm-slots",
        format!("{slots} is not in 1..=64"),
    )?;
    ensure(
        max_pods >= slots,
        "--max-pods",
        format!("{max_pods} is less than --vm-slots {slots}"),
    )?;
    ensure(c.cpu_override != Some(0), "--cpu", "must be at least 1")
}

/// The Lease and Node status timings, which only work in the right proportions to each other.
fn check_heartbeat(c: &Config) -> Result<(), ConfigError> {
    let lease = c.lease_duration;
    ensure(
        lease >= Duration::from_secs(1),
        "--lease-duration",
        "must be at least 1s",
    )?;
    let renew = c.lease_renew_interval;
    ensure(
        !renew.is_zero() && renew.checked_mul(2).is_some_and(|twice| twice <= lease),
        "--lease-renew-interval",
        "must be positive and at most half of --lease-duration",
    )?;
    let check = c.node_status_check_interval;
    ensure(
        !check.is_zero(),
        "--node-status-check-interval",
        "must be positive",
    )?;
    ensure(
        !c.host_check_interval.is_zero(),
        "--host-check-interval",
        "must be positive",
    )?;
    ensure(
        c.quarantine_faults >= 1,
        "--quarantine-faults",
        "must be at least 1",
    )?;
    ensure(
        c.node_status_report_interval >= check,
        "--node-status-report-interval",
        "must be at least --node-status-check-interval",
    )?;
    ensure(
        !c.api_timeout.is_zero() && c.api_timeout < lease,
        "--api-timeout",
        "must be positive and shorter than --lease-duration",
    )
}

/// The serving certificate and its key come as a pair; port 0 would advertise no port; an
/// unspecified or multicast `--node-ip` is no address to dial; a zero deadline or cap would
/// refuse everything.
fn check_kubelet_api(c: &Config) -> Result<(), ConfigError> {
    ensure(
        c.tls_cert_file.is_some() == c.tls_private_key_file.is_some(),
        "--tls-private-key-file",
        "--tls-cert-file and --tls-private-key-file are given together or not at all",
    )?;
    ensure(c.kubelet_port != 0, "--kubelet-port", "must be 1-65535")?;
    if let Some(ip) = c.node_ip {
        ensure(
            !ip.is_unspecified() && !ip.is_multicast(),
            "--node-ip",
            "must be the address the API server reaches this Mac at, not an unspecified or multicast address",
        )?;
    }
    let l = &c.kubelet_api_limits;
    for (d, setting) in [
        (l.handshake, "--kubelet-api-handshake-timeout"),
        (l.header, "--kubelet-api-header-timeout"),
        (l.streaming_idle, "--streaming-connection-idle-timeout"),
    ] {
        ensure(!d.is_zero(), setting, "must be positive")?;
    }
    for (n, setting) in [
        (l.max_connections, "--kubelet-api-max-connections"),
        (l.max_streams, "--kubelet-api-max-streams"),
        (l.max_log_follows, "--kubelet-api-max-log-follows"),
    ] {
        ensure(n >= 1, setting, "must be at least 1")?;
    }
    Ok(())
}

fn check_tart(c: &Config) -> Result<(), ConfigError> {
    ensure(
        (1..=10).contains(&c.tart_attempts),
        "--tart-attempts",
        "must be in 1..=10",
    )
}

/// The one [`VmNaming`] of the agent, from a prefix that is 1-16 valid characters (stricter
/// than [`VmNaming::new`], which also leaves room for the UID).
fn vm_naming(prefix: &str) -> Result<VmNaming, ConfigError> {
    let message = "must be 1-16 characters [A-Za-z0-9._-], not starting with '-' or '.'";
    // `VmNaming::new` checks that the prefix is not empty and makes valid names.
    ensure(prefix.len() <= 16, "--vm-name-prefix", message)?;
    VmNaming::new(prefix).map_err(|_| ConfigError::Invalid {
        setting: "--vm-name-prefix",
        message: message.into(),
    })
}

fn check_pods(c: &Config) -> Result<(), ConfigError> {
    ensure(
        !c.token_refresh_max.is_zero(),
        "--token-refresh-max",
        "must be positive",
    )?;
    ensure(
        c.pod_concurrency > 0,
        "--pod-concurrency",
        "must be at least 1",
    )?;
    ensure(
        c.image_gc_high_threshold <= 100,
        "--image-gc-high-threshold",
        "must be a percentage (0-100)",
    )?;
    let dns = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    ensure(
        dns(&c.prepull_namespace) && dns(&c.prepull_name),
        "--prepull-config",
        "must be <namespace>/<name> of a ConfigMap",
    )?;
    ensure(
        !c.prepull_period.is_zero(),
        "--prepull-period",
        "must be positive",
    )?;
    ensure(
        !c.image_gc_period.is_zero(),
        "--image-gc-period",
        "must be positive",
    )?;
    ensure(
        c.image_gc_low_threshold <= c.image_gc_high_threshold,
        "--image-gc-low-threshold",
        "must not be above --image-gc-high-threshold",
    )
}
