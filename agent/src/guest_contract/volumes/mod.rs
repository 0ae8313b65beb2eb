//! Kubelet's rules for the volumes a guest sees, as pure functions: which Secrets and ConfigMaps
//! a Pod's volumes read ([`references`]), and, from what was fetched, the files of each volume
//! the container mounts and the container's mounts ([`plan_volumes`]). Fetching is
//! `fetch`'s, issuing tokens `token`'s, writing `atomic`'s and
//! `layout`'s; `fieldRef`/`resourceFieldRef` values and `$(VAR)` expansion come in as
//! functions.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{
    Container, DownwardAPIVolumeFile, KeyToPath, Pod, PodSpec, Volume, VolumeMount,
};

use super::model::{
    ConfigError, FileData, MountSpec, ObjectKind, PlannedVolume, Sources, TokenSpec, VolumeContent,
    VolumeFile,
};

/// A file's mode when neither the item nor the volume gives one (the API server's default).
const DEFAULT_MODE: u32 = 0o644;
/// `serviceAccountToken.expirationSeconds` when unset.
const DEFAULT_TOKEN_SECONDS: i64 = 3600;
/// The shortest token lifetime the API server accepts.
const MIN_TOKEN_SECONDS: i64 = 600;
/// Kubelet's limits on a volume file path and on one of its components.
const MAX_PATH_LEN: usize = 4096;
const MAX_NAME_LEN: usize = 255;

/// Resolves one `downwardAPI` item (`fieldRef` or `resourceFieldRef`) to the file's text.
pub(crate) type DownwardResolver<'a> =
    &'a dyn Fn(&DownwardAPIVolumeFile) -> Result<String, ConfigError>;

/// The Secrets/ConfigMaps the Pod's volumes read, each once, in volume order, with whether
/// every reference to it is optional. Volumes no container mounts are skipped, as kubelet
/// skips them (it neither mounts them nor fetches what they read).
pub(crate) fn references(pod: &Pod) -> Vec<(ObjectKind, String, bool)> {
    let mut out: Vec<(ObjectKind, String, bool)> = Vec::new();
    let Some(spec) = pod.spec.as_ref() else {
        return out;
    };
    let mounted = mounted_volumes(spec);
    let volumes = spec.volumes.iter().flatten();
    for volume in volumes.filter(|v| mounted.contains(v.name.as_str())) {
        for (kind, name, optional) in objects(volume) {
            match out.iter_mut().find(|(k, n, _)| *k == kind && n == name) {
                Some(seen) => seen.2 &= optional,
                None => out.push((kind, name.to_owned(), optional)),
            }
        }
    }
    out
}

/// The volumes `container` mounts (in the Pod's volume order, share `vol-<index in
/// spec.volumes>`), with their files, and the container's mounts in its own order.
///
/// # Errors
/// [`ConfigError::MissingObject`] / [`ConfigError::MissingKey`] for a required object or key
/// that is not there, [`ConfigError::InvalidPath`] for a file path, `subPath` or `mountPath`
/// that would leave its volume or collides, [`ConfigError::InvalidReference`] for a mount of
/// an unknown volume or a volume type a VM cannot have, and whatever `downward` returns.
pub(crate) fn plan_volumes(
    pod: &Pod,
    container: &Container,
    sources: &Sources,
    downward: DownwardResolver<'_>,
    expand: &dyn Fn(&str) -> String,
) -> Result<(Vec<PlannedVolume>, Vec<MountSpec>), ConfigError> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mounts = container.volume_mounts.as_deref().unwrap_or_default();
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_deref());
    let mut planned = Vec::new();
    for (index, volume) in volumes.unwrap_or_default().iter().enumerate() {
        if !mounts.iter().any(|m| m.name == volume.name) {
            continue;
        }
        let ctx = Ctx {
            namespace,
            sources,
            downward,
        };
        let mut reads: Vec<(ObjectKind, String)> = Vec::new();
        for (kind, name, _) in objects(volume) {
            if !reads.iter().any(|(k, n)| *k == kind && n == name) {
                reads.push((kind, name.to_owned()));
            }
        }
        planned.push(PlannedVolume {
            name: volume.name.clone(),
            share: format!("vol-{index}"),
            content: content(volume, &ctx)?,
            reads,
        });
    }
    let specs = mounts
        .iter()
        .map(|m| mount_spec(m, &planned, expand))
        .collect::<Result<_, _>>()?;
    Ok((planned, specs))
}

/// Names of the volumes any container of the Pod mounts.
fn mounted_volumes(spec: &PodSpec) -> BTreeSet<&str> {
    let init = spec.init_containers.iter().flatten();
    spec.containers
        .iter()
        .chain(init)
        .flat_map(|c| c.volume_mounts.iter().flatten())
        .map(|m| m.name.as_str())
        .collect()
}

/// The objects one volume reads: `(kind, name, optional)`, possibly repeated.
fn objects(volume: &Volume) -> Vec<(ObjectKind, &str, bool)> {
    let mut out = Vec::new();
    if let Some(s) = &volume.secret
        && let Some(name) = s.secret_name.as_deref()
    {
        out.push((ObjectKind::Secret, name, s.optional.unwrap_or(false)));
    }
    if let Some(c) = &volume.config_map {
        out.push((ObjectKind::ConfigMap, &c.name, c.optional.unwrap_or(false)));
    }
    for source in volume
        .projected
        .iter()
        .flat_map(|p| p.sources.iter().flatten())
    {
        if let Some(s) = &source.secret {
            out.push((ObjectKind::Secret, &s.name, s.optional.unwrap_or(false)));
        }
        if let Some(c) = &source.config_map {
            out.push((ObjectKind::ConfigMap, &c.name, c.optional.unwrap_or(false)));
        }
    }
    out
}

/// What the content builders read.
struct Ctx<'a> {
    namespace: &'a str,
    sources: &'a Sources,
    downward: DownwardResolver<'a>,
}

fn content(volume: &Volume, ctx: &Ctx<'_>) -> Result<VolumeContent, ConfigError> {
    if volume.empty_dir.is_some() {
        return Ok(VolumeContent::EmptyDir);
    }
    let mut files = Files::new(&volume.name);
    if let Some(s) = &volume.secret {
        let default = mode_or(s.default_mode, DEFAULT_MODE);
        let name = s.secret_name.as_deref().unwrap_or_default();
        let optional = s.optional.unwrap_or(false);
        let items = s.items.as_deref();
        keyed(
            ctx,
            ObjectKind::Secret,
            name,
            items,
            optional,
            default,
            &mut files,
        )?;
    } else if let Some(c) = &volume.config_map {
        let default = mode_or(c.default_mode, DEFAULT_MODE);
        let optional = c.optional.unwrap_or(false);
        let items = c.items.as_deref();
        keyed(
            ctx,
            ObjectKind::ConfigMap,
            &c.name,
            items,
            optional,
            default,
            &mut files,
        )?;
    } else if let Some(d) = &volume.downward_api {
        let default = mode_or(d.default_mode, DEFAULT_MODE);
        downward_items(ctx, d.items.as_deref(), default, &mut files)?;
    } else if let Some(p) = &volume.projected {
        let default = mode_or(p.default_mode, DEFAULT_MODE);
        for source in p.sources.iter().flatten() {
            if let Some(s) = &source.secret {
                let (items, optional) = (s.items.as_deref(), s.optional.unwrap_or(false));
                keyed(
                    ctx,
                    ObjectKind::Secret,
                    &s.name,
                    items,
                    optional,
                    default,
                    &mut files,
                )?;
            } else if let Some(c) = &source.config_map {
                let (items, optional) = (c.items.as_deref(), c.optional.unwrap_or(false));
                keyed(
                    ctx,
                    ObjectKind::ConfigMap,
                    &c.name,
                    items,
                    optional,
                    default,
                    &mut files,
                )?;
            } else if let Some(d) = &source.downward_api {
                downward_items(ctx, d.items.as_deref(), default, &mut files)?;
            } else if let Some(t) = &source.service_account_token {
                let token = TokenSpec {
                    audience: t.audience.clone().filter(|a| !a.is_empty()),
                    expiration_seconds: t
                        .expiration_seconds
                        .unwrap_or(DEFAULT_TOKEN_SECONDS)
                        .max(MIN_TOKEN_SECONDS),
                };
                files.push(&t.path, FileData::Token(token), default)?;
            } else {
                return Err(unsupported(
                    &volume.name,
                    "a projected source other than secret, configMap, downwardAPI or serviceAccountToken",
                ));
            }
        }
    } else {
        return Err(unsupported(
            &volume.name,
            "a volume type other than secret, configMap, downwardAPI, projected or emptyDir",
        ));
    }
    files.finish()
}

fn unsupported(volume: &str, what: &str) -> ConfigError {
    ConfigError::InvalidReference(format!(
        "volume {volume:?} uses {what}, which a Tart VM cannot have"
    ))
}

/// A Secret's or ConfigMap's keys as files (kubelet's `MakePayload`): with `items`, the listed
/// keys at their paths (a missing key fails unless the source is optional); without, every key
/// at its own name. A missing object fails unless optional, then it adds nothing.
fn keyed(
    ctx: &Ctx<'_>,
    kind: ObjectKind,
    name: &str,
    items: Option<&[KeyToPath]>,
    optional: bool,
    default_mode: u32,
    files: &mut Files<'_>,
) -> Result<(), ConfigError> {
    let Some(data) = ctx.sources.get(kind, name) else {
        if optional {
            return Ok(());
        }
        return Err(ConfigError::MissingObject {
            kind,
            name: name.to_owned(),
        });
    };
    match items.filter(|i| !i.is_empty()) {
        None => {
            for (key, value) in data {
                files.push(key, FileData::Bytes(value.clone()), default_mode)?;
            }
        }
        Some(items) => {
            for item in items {
                let Some(value) = data.get(&item.key) else {
                    if optional {
                        continue;
                    }
                    return Err(ConfigError::MissingKey {
                        kind,
                        namespace: ctx.namespace.to_owned(),
                        name: name.to_owned(),
                        key: item.key.clone(),
                    });
                };
                let mode = mode_or(item.mode, default_mode);
                files.push(&item.path, FileData::Bytes(value.clone()), mode)?;
            }
        }
    }
    Ok(())
}

fn downward_items(
    ctx: &Ctx<'_>,
    items: Option<&[DownwardAPIVolumeFile]>,
    default_mode: u32,
    files: &mut Files<'_>,
) -> Result<(), ConfigError> {
    for item in items.unwrap_or_default() {
        let value = (ctx.downward)(item)?;
        let mode = mode_or(item.mode, default_mode);
        files.push(&item.path, FileData::Bytes(value.into_bytes()), mode)?;
    }
    Ok(())
}

/// A mode from the API (validated there to `0..=0o777`); anything else keeps `default`.
fn mode_or(mode: Option<i32>, default: u32) -> u32 {
    mode.and_then(|m| u32::try_from(m).ok())
        .map_or(default, |m| m & 0o777)
}

/// One volume's files as they are added, with kubelet's path checks.
struct Files<'a> {
    volume: &'a str,
    files: Vec<VolumeFile>,
}

impl<'a> Files<'a> {
    fn new(volume: &'a str) -> Self {
        Self {
            volume,
            files: Vec::new(),
        }
    }

    fn invalid(&self, path: &str, why: &'static str) -> ConfigError {
        ConfigError::InvalidPath {
            volume: self.volume.to_owned(),
            path: path.to_owned(),
            why,
        }
    }

    /// Check `path` (kubelet's `validatePath`), clean it (no `.` or empty components) and add
    /// the file.
    fn push(&mut self, path: &str, data: FileData, mode: u32) -> Result<(), ConfigError> {
        let why = if path.is_empty() {
            Some("must not be empty")
        } else if path.starts_with('/') {
            Some("must be a relative path")
        } else if path.len() > MAX_PATH_LEN {
            Some("is longer than 4096 bytes")
        } else if path.contains('\0') {
            Some("must not contain a NUL byte")
        } else if path.split('/').any(|c| c == "..") {
            Some("must not contain '..'")
        } else if path.split('/').any(|c| c.len() > MAX_NAME_LEN) {
            Some("has a component longer than 255 bytes")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(self.invalid(path, why));
        }
        let cleaned = path
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect::<Vec<_>>()
            .join("/");
        if cleaned.is_empty() {
            return Err(self.invalid(path, "must name a file"));
        }
        // `..data` and the timestamped directories live beside the files (see the atomic writer).
        if cleaned.starts_with("..") {
            return Err(self.invalid(path, "must not start with '..'"));
        }
        self.files.push(VolumeFile {
            path: cleaned,
            data,
            mode,
        });
        Ok(())
    }

    /// Refuse a path given twice, or one that is both a file and another file's directory.
    fn finish(self) -> Result<VolumeContent, ConfigError> {
        let mut paths = BTreeSet::new();
        for f in &self.files {
            if !paths.insert(f.path.as_str()) {
                return Err(self.invalid(&f.path, "is given twice"));
            }
        }
        for f in &self.files {
            let mut parent = f.path.as_str();
            while let Some((dir, _)) = parent.rsplit_once('/') {
                if paths.contains(dir) {
                    return Err(self.invalid(dir, "is both a file and a directory"));
                }
                parent = dir;
            }
        }
        Ok(VolumeContent::Files(self.files))
    }
}

fn mount_spec(
    mount: &VolumeMount,
    planned: &[PlannedVolume],
    expand: &dyn Fn(&str) -> String,
) -> Result<MountSpec, ConfigError> {
    let invalid = |path: &str, why| ConfigError::InvalidPath {
        volume: mount.name.clone(),
        path: path.to_owned(),
        why,
    };
    let Some(volume) = planned.iter().find(|p| p.name == mount.name) else {
        return Err(ConfigError::InvalidReference(format!(
            "volumeMount {:?} names no volume of the Pod",
            mount.name
        )));
    };
    if !mount.mount_path.starts_with('/') {
        return Err(invalid(&mount.mount_path, "mountPath must be absolute"));
    }
    let sub_path = mount.sub_path.as_deref().filter(|s| !s.is_empty());
    let sub_expr = mount.sub_path_expr.as_deref().filter(|s| !s.is_empty());
    let sub = match (sub_path, sub_expr) {
        (Some(s), None) => s.to_owned(),
        (None, Some(e)) => expand(e),
        (None, None) => String::new(),
        (Some(s), Some(_)) => {
            return Err(invalid(s, "subPath and subPathExpr are mutually exclusive"));
        }
    };
    if sub.starts_with('/') {
        return Err(invalid(&sub, "subPath must be a relative path"));
    }
    if sub.split('/').any(|c| c == "..") {
        return Err(invalid(&sub, "subPath must not contain '..'"));
    }
    Ok(MountSpec {
        share: volume.share.clone(),
        path: mount.mount_path.clone(),
        sub: Some(sub).filter(|s| !s.is_empty()),
    })
}

#[cfg(test)]
mod paths_tests;
#[cfg(test)]
mod tests;
