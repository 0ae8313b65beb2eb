//! Doctor's I/O: each probe gathers one set of facts with a deadline and hands them to the
//! pure verdicts in [`super::checks`].
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tokio::process::Command;
use tokio::time::timeout;

use super::checks::{TartHomeProbe, TartProbe};
use crate::config::Config;
use crate::ship::rbac::{ALWAYS, Permission};

/// Finds `program` like `execvp` would: as given when it contains a `/`, else on `PATH`.
pub(crate) fn resolve_program(program: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let exec = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.components().count() > 1 || program.is_absolute() {
        return exec(program).then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| exec(p))
}

async fn tart_output(
    cfg: &Config,
    prog: &Path,
    args: &[&str],
    deadline: Duration,
) -> Result<String, String> {
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .env("TART_HOME", &cfg.tart_home)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = timeout(deadline, cmd.output())
        .await
        .map_err(|_| format!("timed out after {deadline:?}"))?
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "exit {:?}: {}",
            out.status.code(),
            err.lines().next().unwrap_or_default()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `tart --version`.
pub(crate) async fn tart(cfg: &Config, deadline: Duration) -> (TartProbe, Option<PathBuf>) {
    let Some(path) = resolve_program(&cfg.tart_program) else {
        return (
            TartProbe::NotFound(format!(
                "{} is not an executable on PATH",
                cfg.tart_program.display()
            )),
            None,
        );
    };
    let p = match tart_output(cfg, &path, &["--version"], deadline).await {
        Ok(output) => TartProbe::Version {
            path: path.display().to_string(),
            output,
        },
        Err(e) => TartProbe::Broken(e),
    };
    (p, Some(path))
}

/// Names of running VMs without the agent's prefix (`tart list --format json`).
pub(crate) async fn foreign_running_vms(
    cfg: &Config,
    tart: &Path,
    deadline: Duration,
) -> Result<Vec<String>, String> {
    let out = tart_output(cfg, tart, &["list", "--format", "json"], deadline).await?;
    let v: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| format!("bad JSON from tart list: {e}"))?;
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .filter(|vm| vm["State"].as_str() == Some("running"))
        .filter_map(|vm| vm["Name"].as_str())
        .filter(|n| !n.starts_with(cfg.vm_naming.prefix()))
        .map(str::to_string)
        .collect())
}

/// Creates `TART_HOME` if needed, writes and removes a file in it, reads its volume.
pub(crate) async fn tart_home(cfg: &Config) -> TartHomeProbe {
    let dir = cfg.tart_home.clone();
    let writable = async {
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| e.to_string())?;
        let f = dir.join(format!(".tart-kubelet-doctor-{}", std::process::id()));
        tokio::fs::write(&f, b"ok")
            .await
            .map_err(|e| e.to_string())?;
        tokio::fs::remove_file(&f).await.map_err(|e| e.to_string())
    }
    .await;
    let volume = crate::host::statvfs(&dir)
        .ok()
        .map(|v| (v.total_bytes, v.free_bytes));
    TartHomeProbe {
        path: dir.display().to_string(),
        writable,
        volume,
        min_free: volume
            .map(|(t, _)| cfg.disk_pressure.min_free(t))
            .unwrap_or(0),
    }
}

/// A kube client for the agent's identity, and a display name for that identity.
///
/// # Errors
/// The kubeconfig cannot be read or is unusable.
pub(crate) async fn client(cfg: &Config) -> Result<(kube::Client, String), String> {
    use crate::{errors::error_chain, kube_client::Origin};
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let (config, origin, who) = match &cfg.kubeconfig {
        Some(p) => {
            let kc = Kubeconfig::read_from(p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            let ctx = kc.current_context.clone().unwrap_or_default();
            let user = kc
                .contexts
                .iter()
                .find(|c| c.name == ctx)
                .and_then(|c| c.context.as_ref())
                .and_then(|c| c.user.clone())
                .unwrap_or_else(|| "the kubeconfig user".into());
            let origin = Origin::of(p, &kc);
            let c = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|e| format!("{} is not a usable kubeconfig: {e}", p.display()))?;
            (c, origin, format!("user {user:?} of {}", p.display()))
        }
        None => (
            kube::Config::infer().await.map_err(|e| {
                format!("no kubeconfig found ($KUBECONFIG, ~/.kube/config, in-cluster): {e}")
            })?,
            Origin::inferred(),
            "the inferred kubeconfig's user".to_string(),
        ),
    };
    let client = crate::kube_client::client(&config, origin)
        .map_err(|e| format!("cannot build a client: {}", error_chain(&e)))?;
    Ok((client, who))
}

/// `GET /version` with a deadline: proves the URL, CA and credentials work.
pub(crate) async fn api_version(
    client: &kube::Client,
    deadline: Duration,
) -> Result<String, String> {
    let v = timeout(deadline, client.apiserver_version())
        .await
        .map_err(|_| format!("the API server did not answer within {deadline:?}"))?
        .map_err(|e| e.to_string())?;
    Ok(v.git_version)
}

/// One SelfSubjectAccessReview per permission; those with [`Permission::own_name`] name
/// `node` (the agent's own Node or Lease).
pub(crate) async fn access_reviews(
    client: &kube::Client,
    perms: &[Permission],
    node: &str,
    deadline: Duration,
) -> Vec<(Permission, Result<bool, String>)> {
    let mut out = Vec::with_capacity(perms.len());
    for p in perms {
        let name = p.own_name.then_some(node);
        out.push((*p, review(client, p, name, deadline).await));
    }
    out
}

/// Whether the credentials may read the Lease named `own` and the Lease named `other` in the
/// node-lease namespace: the Node authorizer gives a node its own Lease only.
pub(crate) async fn lease_reviews(
    client: &kube::Client,
    own: &str,
    other: &str,
    deadline: Duration,
) -> (Result<bool, String>, Result<bool, String>) {
    let get = ALWAYS
        .iter()
        .find(|p| p.resource == "leases" && p.verb == "get")
        .copied()
        .expect("the Lease read is a listed permission");
    (
        review(client, &get, Some(own), deadline).await,
        review(client, &get, Some(other), deadline).await,
    )
}

/// One SelfSubjectAccessReview of `p` (on the object `name`, if given).
async fn review(
    client: &kube::Client,
    p: &Permission,
    name: Option<&str>,
    deadline: Duration,
) -> Result<bool, String> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(p.group.to_string()),
                resource: Some(p.resource.to_string()),
                subresource: (!p.subresource.is_empty()).then(|| p.subresource.to_string()),
                verb: Some(p.verb.to_string()),
                namespace: (!p.namespace.is_empty()).then(|| p.namespace.to_string()),
                name: name.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    match timeout(deadline, api.create(&PostParams::default(), &review)).await {
        Err(_) => Err(format!("no answer within {deadline:?}")),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(r)) => Ok(r.status.map(|s| s.allowed).unwrap_or(false)),
    }
}
