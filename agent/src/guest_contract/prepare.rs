//! Everything before `tart run`: fetch what the Pod reads, resolve its environment, volumes,
//! tokens and command with kubelet's rules, and write the per-VM directories the guest gets as
//! `--dir` shares. A failure is a [`ConfigError`]: the container waits
//! `CreateContainerConfigError` and the worker tries again with backoff.
//!
//! Values never leave this module except into files under the per-VM root (mode 0700
//! directories): they are not logged, not put in errors, and never reach any argv.

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::{
    api::core::v1::{Container, DownwardAPIVolumeFile, Pod},
    jiff::Timestamp,
};
use kube::ResourceExt;
use tart::{DirShare, VmName};

use super::{
    atomic::write_atomic,
    control::write_control,
    downward, env,
    expand::expand,
    fetch::fetch,
    layout::GuestLayout,
    model::{
        ConfigError, ControlSpec, DownwardContext, FileData, GuestStdin, ObjectKind, PlannedVolume,
        ResolvedEnv, Sources, TokenSpec, VolumeContent,
    },
    token::{IssuedToken, is_valid, refresh_at, request_token},
    volumes,
};

/// What preparing a guest needs besides the Pod.
#[derive(Debug, Clone)]
pub(crate) struct GuestSettings {
    /// The per-VM directories.
    pub layout: GuestLayout,
    /// This node's name (`spec.nodeName`).
    pub node_name: String,
    /// The Mac's InternalIP (`status.hostIP`).
    pub host_ip: String,
    /// Deadline of each API request.
    pub api_timeout: Duration,
    /// Longest time between token refreshes.
    pub token_refresh_max: Duration,
}

/// Node allocatable, for `resourceFieldRef` limits the container does not set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct NodeAllocatable {
    /// Millicores.
    pub cpu_millis: u64,
    pub memory_bytes: u64,
    pub ephemeral_bytes: u64,
}

/// Issued tokens by `(volume, path)`, reused until their refresh time.
#[derive(Debug, Default)]
pub(crate) struct Tokens(BTreeMap<(String, String), IssuedToken>);

/// A warning for the Pod that preparing its guest found; the caller turns it into its event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GuestWarning {
    /// `envFrom` keys skipped because they are not valid variable names.
    InvalidEnvNames {
        /// `configmap` or `secret`, as kubelet words it.
        source_kind: &'static str,
        /// `<namespace>/<name>` of the source.
        source: String,
        /// The skipped keys.
        keys: Vec<String>,
    },
    /// Environment variables from `status.podIP`/`podIPs`, which are unknown before the VM
    /// boots.
    PodIpUnknown {
        /// The variables' names.
        names: Vec<String>,
    },
}

/// A prepared guest: its files, resolved and ready to write, and what the refresher keeps
/// current.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The files of the guest's shares (control, status, one per mounted volume), not yet
    /// written: [`GuestFiles::write`].
    pub files: GuestFiles,
    /// Warnings for the Pod (invalid envFrom keys, podIP not yet known).
    pub warnings: Vec<GuestWarning>,
    /// The tokens written.
    pub tokens: Tokens,
    /// Time spent waiting on the API server (gets, TokenRequests): not the agent's own work.
    pub api_wait: Duration,
}

/// Everything one resolution reads.
struct Resolution<'a> {
    pod: &'a Pod,
    container: &'a Container,
    sources: Sources,
    downward: DownwardContext,
}

impl Resolution<'_> {
    fn downward_file(&self, f: &DownwardAPIVolumeFile) -> Result<String, ConfigError> {
        if let Some(r) = &f.field_ref {
            return downward::field_value(self.pod, &self.downward, &r.field_path);
        }
        if let Some(r) = &f.resource_field_ref {
            return downward::resource_value(
                self.container,
                &self.downward,
                &r.resource,
                r.divisor.as_ref(),
            );
        }
        Err(ConfigError::InvalidReference(format!(
            "downwardAPI item {:?} names neither a field nor a resource",
            f.path
        )))
    }
}

/// Fetch what `pod` reads and resolve its volumes (and, with `with_env`, its environment).
async fn resolve<'a>(
    client: &kube::Client,
    s: &GuestSettings,
    pod: &'a Pod,
    alloc: NodeAllocatable,
    with_env: bool,
) -> Result<Resolution<'a>, ConfigError> {
    let container = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .ok_or_else(|| ConfigError::InvalidReference("the Pod has no container".into()))?;
    let mut refs: Vec<(ObjectKind, String)> = volumes::references(pod)
        .into_iter()
        .map(|(k, n, _)| (k, n))
        .collect();
    if with_env {
        refs.extend(
            env::references(container)
                .into_iter()
                .map(|(k, n, _)| (k, n)),
        );
    }
    let namespace = pod.namespace().unwrap_or_default();
    let sources = fetch(client, &namespace, refs, s.api_timeout).await?;
    let downward = DownwardContext {
        node_name: s.node_name.clone(),
        host_ip: s.host_ip.clone(),
        pod_ip: None,
        node_cpu_millis: alloc.cpu_millis,
        node_memory_bytes: alloc.memory_bytes,
        node_ephemeral_bytes: alloc.ephemeral_bytes,
    };
    Ok(Resolution {
        pod,
        container,
        sources,
        downward,
    })
}

/// Prepare `vm`'s guest for `pod`: fetch what it reads and resolve its environment, volumes,
/// tokens and command. Writing them is [`GuestFiles::write`]'s, which the caller runs on a
/// blocking thread when it suits it (the worker, while `tart clone` runs).
///
/// # Errors
/// A [`ConfigError`] naming what is missing or wrong (never a value).
pub(crate) async fn prepare(
    client: &kube::Client,
    s: &GuestSettings,
    pod: &Pod,
    alloc: NodeAllocatable,
    vm: &VmName,
) -> Result<Prepared, ConfigError> {
    let started = tokio::time::Instant::now();
    let r = resolve(client, s, pod, alloc, true).await?;
    let mut api_wait = started.elapsed();
    let env = env::resolve_env(pod, r.container, &r.sources, &r.downward)?;
    let lookup = env_lookup(&env);
    let (planned, mounts) = volumes::plan_volumes(
        pod,
        r.container,
        &r.sources,
        &|f| r.downward_file(f),
        &|p| expand(p, &lookup),
    )?;
    let mut tokens = Tokens::default();
    let started = tokio::time::Instant::now();
    let (files, _) = materialize(client, s, pod, &planned, &mut tokens).await?;
    api_wait += started.elapsed();
    let control = ControlSpec {
        env: env.vars.clone(),
        command: env::expand_args(r.container.command.as_deref().unwrap_or_default(), &env),
        args: env::expand_args(r.container.args.as_deref().unwrap_or_default(), &env),
        workdir: r.container.working_dir.clone().filter(|w| !w.is_empty()),
        user: run_as_user(pod, r.container).map(|u| u.to_string()),
        mounts,
        termination_message_path: Some(
            r.container
                .termination_message_path
                .clone()
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "/dev/termination-log".into()),
        ),
        stdin: GuestStdin::of(r.container.stdin, r.container.stdin_once),
    };
    Ok(Prepared {
        files: GuestFiles {
            layout: s.layout.clone(),
            vm: vm.clone(),
            planned,
            files,
            control,
        },
        warnings: warnings(r.container, &env),
        tokens,
        api_wait,
    })
}

/// A guest's resolved files, to be written under its per-VM directory: the layout's
/// directories, the file volumes and the control share. Its `Debug` names the VM only, never a
/// value.
pub(crate) struct GuestFiles {
    layout: GuestLayout,
    vm: VmName,
    planned: Vec<PlannedVolume>,
    files: VolumeFiles,
    control: ControlSpec,
}

impl std::fmt::Debug for GuestFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestFiles")
            .field("vm", &self.vm)
            .field("shares", &self.share_count())
            .finish_non_exhaustive()
    }
}

impl GuestFiles {
    /// How many `--dir` shares the guest gets: control, status and one per volume.
    pub(crate) fn share_count(&self) -> usize {
        2 + self.planned.len()
    }

    /// Write the files and return the `--dir` shares for `tart run`. Synchronous file I/O:
    /// callers run it on a blocking thread.
    ///
    /// # Errors
    /// [`ConfigError::Io`] naming what could not be written (never a value).
    pub(crate) fn write(self) -> Result<Vec<DirShare>, ConfigError> {
        let Self {
            layout,
            vm,
            planned,
            files,
            control,
        } = self;
        let written = (|| {
            layout.create(&vm, &planned)?;
            for (share, list) in &files {
                write_atomic(&layout.volume(&vm, share), list)?;
            }
            write_control(&layout.control(&vm), &control)?;
            Ok(layout.shares(&vm, &planned))
        })();
        written.map_err(|e: std::io::Error| ConfigError::Io(e.to_string()))
    }
}

/// What a refresh did.
#[derive(Debug, Default)]
pub(crate) struct Refreshed {
    /// Some file changed.
    pub changed: bool,
    /// Token refreshes that failed while the old token is still valid, by volume.
    pub stale_tokens: Vec<(String, ConfigError)>,
}

/// Rewrite `vm`'s Secret, ConfigMap, downward API and token volumes from their current
/// sources. The environment is not touched: it is fixed at start, as kubelet's.
///
/// # Errors
/// A [`ConfigError`]; the files already in place stay as they were.
pub(crate) async fn refresh_volumes(
    client: &kube::Client,
    s: &GuestSettings,
    pod: &Pod,
    alloc: NodeAllocatable,
    vm: &VmName,
    tokens: &mut Tokens,
) -> Result<Refreshed, ConfigError> {
    let r = resolve(client, s, pod, alloc, false).await?;
    // subPathExpr is expanded against the environment, which is fixed at start: mounts are
    // not rewritten here, so an empty expansion is enough.
    let (planned, _) = volumes::plan_volumes(
        pod,
        r.container,
        &r.sources,
        &|f| r.downward_file(f),
        &|p| p.to_owned(),
    )?;
    let (files, stale_tokens) = materialize(client, s, pod, &planned, tokens).await?;
    let layout = s.layout.clone();
    let vm = vm.clone();
    let changed = blocking(move || {
        let mut changed = false;
        for (share, list) in &files {
            changed |= write_atomic(&layout.volume(&vm, share), list)?;
        }
        Ok(changed)
    })
    .await?;
    Ok(Refreshed {
        changed,
        stale_tokens,
    })
}

/// The earliest time a cached token is due for refresh.
pub(crate) fn next_token_refresh(tokens: &Tokens, max: Duration) -> Option<Timestamp> {
    tokens.0.values().map(|t| refresh_at(t, max)).min()
}

type VolumeFiles = Vec<(String, Vec<(String, Vec<u8>, u32)>)>;

/// The bytes of every file volume, issuing (or reusing) tokens. The second list: token
/// refreshes that failed while the old token is still valid (it is written instead).
async fn materialize(
    client: &kube::Client,
    s: &GuestSettings,
    pod: &Pod,
    planned: &[PlannedVolume],
    tokens: &mut Tokens,
) -> Result<(VolumeFiles, Vec<(String, ConfigError)>), ConfigError> {
    let mut out = vec![];
    let mut stale = vec![];
    for v in planned {
        let VolumeContent::Files(files) = &v.content else {
            continue;
        };
        let mut list = vec![];
        for f in files {
            let data = match &f.data {
                FileData::Bytes(b) => b.clone(),
                FileData::Token(spec) => {
                    let key = (v.name.clone(), f.path.clone());
                    let (bytes, failed) = token_for(client, s, pod, spec, key, tokens).await?;
                    if let Some(e) = failed {
                        stale.push((v.name.clone(), e));
                    }
                    bytes
                }
            };
            list.push((f.path.clone(), data, f.mode));
        }
        out.push((v.share.clone(), list));
    }
    Ok((out, stale))
}

/// The cached token for `key` while it is not due, else a new one. A failed request keeps a
/// cached token that has not expired, and returns the failure beside it for the caller to
/// report; with none, it fails.
async fn token_for(
    client: &kube::Client,
    s: &GuestSettings,
    pod: &Pod,
    spec: &TokenSpec,
    key: (String, String),
    tokens: &mut Tokens,
) -> Result<(Vec<u8>, Option<ConfigError>), ConfigError> {
    let now = Timestamp::now();
    if let Some(t) = tokens
        .0
        .get(&key)
        .filter(|t| refresh_at(t, s.token_refresh_max) > now)
    {
        return Ok((t.token.clone().into_bytes(), None));
    }
    let sa = pod
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".into());
    let res = request_token(
        client,
        &pod.namespace().unwrap_or_default(),
        &sa,
        &pod.name_any(),
        &pod.uid().unwrap_or_default(),
        spec,
        s.api_timeout,
    )
    .await;
    match res {
        Ok(t) => {
            let bytes = t.token.clone().into_bytes();
            tokens.0.insert(key, t);
            Ok((bytes, None))
        }
        Err(e) => {
            tracing::warn!(kind = e.kind(), service_account = %sa, "TokenRequest failed");
            match tokens.0.get(&key).filter(|t| is_valid(t, now)) {
                Some(t) => Ok((t.token.clone().into_bytes(), Some(e.config_error(&sa)))),
                None => Err(e.config_error(&sa)),
            }
        }
    }
}

/// `runAsUser` of the container, else of the Pod.
fn run_as_user(pod: &Pod, c: &Container) -> Option<i64> {
    c.security_context
        .as_ref()
        .and_then(|s| s.run_as_user)
        .or_else(|| {
            pod.spec
                .as_ref()
                .and_then(|s| s.security_context.as_ref())
                .and_then(|s| s.run_as_user)
        })
}

fn env_lookup(env: &ResolvedEnv) -> impl Fn(&str) -> Option<String> + '_ {
    |name| {
        env.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    }
}

/// Warnings kubelet would give, and ours for the VM's IP.
fn warnings(c: &Container, env: &ResolvedEnv) -> Vec<GuestWarning> {
    let mut out: Vec<GuestWarning> = env
        .invalid_keys
        .iter()
        .map(|k| GuestWarning::InvalidEnvNames {
            source_kind: k.kind.as_str(),
            source: format!("{}/{}", k.namespace, k.name),
            keys: k.keys.clone(),
        })
        .collect();
    if downward::needs_pod_ip(c) {
        let names = c
            .env
            .iter()
            .flatten()
            .filter(|e| {
                e.value_from
                    .as_ref()
                    .and_then(|f| f.field_ref.as_ref())
                    .is_some_and(|f| f.field_path.starts_with("status.podIP"))
            })
            .map(|e| e.name.clone())
            .collect();
        out.push(GuestWarning::PodIpUnknown { names });
    }
    out
}

async fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<R> + Send + 'static,
) -> Result<R, ConfigError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(ConfigError::Io(e.to_string())),
        Err(e) => Err(ConfigError::Io(e.to_string())),
    }
}
