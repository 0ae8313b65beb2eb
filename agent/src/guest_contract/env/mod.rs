//! The container's environment with kubelet's semantics (its `makeEnvironmentVariables`), and
//! `command`/`args` expansion against it.
//!
//! Resolution, in order:
//! 1. `envFrom`, each source in order; its keys in sorted order, each with `prefix` put in
//!    front. A resulting name that is not a valid variable name is skipped and listed in
//!    [`ResolvedEnv::invalid_keys`] (sorted, one entry per source), for kubelet's
//!    `InvalidEnvironmentVariableNames` Warning. Validity is the rule of kubelet 1.28:
//!    `[-._a-zA-Z][-._a-zA-Z0-9]*`, and not `.`, `..` or starting with `..` (1.30 relaxed it to
//!    any printable ASCII but `=`; the 1.28 rule keeps every name a shell can export). A
//!    missing source is [`ConfigError::MissingObject`] unless `optional: true`, which skips it.
//! 2. `env`, in order. A non-empty `value` is expanded (`expand`) against the
//!    variables defined so far: `envFrom`'s and earlier `env` entries (kubelet adds Service
//!    variables too; the agent has none). `valueFrom` is never expanded: `fieldRef` and
//!    `resourceFieldRef` come from `downward`, `secretKeyRef` and `configMapKeyRef`
//!    from the fetched objects. A missing object is `MissingObject`, a missing key
//!    [`ConfigError::MissingKey`]; with `optional: true` either skips the variable, which then
//!    keeps any earlier definition. `fileKeyRef` is not supported.
//! 3. A later definition of a name replaces the value of an earlier one. Kubelet collects the
//!    variables in a map and emits them in map order; here each name appears once, at the
//!    position of its first definition, with the value of its last.
//!
//! Values are bytes: a Secret's value need not be UTF-8 and is carried unchanged, including
//! through `$(VAR)` in a later `value`. A final value holding a NUL byte, which no process
//! environment can carry, is [`ConfigError::NulInEnv`] (kubelet passes it to the runtime, which
//! fails). `command`/`args` are strings, so a non-UTF-8 value they reference is expanded with
//! U+FFFD for its invalid bytes.
//!
//! A ConfigMap's `binaryData` keys are visible here alongside its `data` ([`Sources`] holds them
//! merged), where kubelet reads `data` only.
//!
//! Pure. Errors carry names and keys, never values.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, EnvFromSource, EnvVarSource, Pod};

use super::{
    downward::{field_ref_value, resource_value},
    expand::{expand, expand_bytes},
    model::{
        ConfigError, DownwardContext, InvalidKeys, ObjectData, ObjectKind, ResolvedEnv, Sources,
    },
};

/// The Secrets/ConfigMaps the container's env and envFrom read (to fetch), each once, in the
/// order first named, with whether *every* reference to it is optional.
pub(crate) fn references(container: &Container) -> Vec<(ObjectKind, String, bool)> {
    let mut out: Vec<(ObjectKind, String, bool)> = Vec::new();
    let mut note = |kind: ObjectKind, name: &str, optional: Option<bool>| {
        let optional = optional.unwrap_or(false);
        match out.iter_mut().find(|(k, n, _)| *k == kind && n == name) {
            Some(entry) => entry.2 &= optional,
            None => out.push((kind, name.to_owned(), optional)),
        }
    };
    for from in container.env_from.iter().flatten() {
        if let Some(cm) = &from.config_map_ref {
            note(ObjectKind::ConfigMap, &cm.name, cm.optional);
        }
        if let Some(s) = &from.secret_ref {
            note(ObjectKind::Secret, &s.name, s.optional);
        }
    }
    for src in container
        .env
        .iter()
        .flatten()
        .filter_map(|e| e.value_from.as_ref())
    {
        if let Some(cm) = &src.config_map_key_ref {
            note(ObjectKind::ConfigMap, &cm.name, cm.optional);
        }
        if let Some(s) = &src.secret_key_ref {
            note(ObjectKind::Secret, &s.name, s.optional);
        }
    }
    out
}

/// Kubelet's `makeEnvironmentVariables` for `container` of `pod`.
///
/// # Errors
/// A required object or key is missing, a downward reference cannot be resolved, or a value
/// holds a NUL byte.
pub(crate) fn resolve_env(
    pod: &Pod,
    container: &Container,
    sources: &Sources,
    ctx: &DownwardContext,
) -> Result<ResolvedEnv, ConfigError> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut vars = Vars::default();
    let mut invalid_keys = Vec::new();

    for from in container.env_from.iter().flatten() {
        let Some((kind, name, optional)) = env_from_source(from) else {
            continue;
        };
        let Some(data) = object(sources, kind, name, optional)? else {
            continue;
        };
        let prefix = from.prefix.as_deref().unwrap_or_default();
        let mut skipped = Vec::new();
        for (key, value) in data {
            let key = format!("{prefix}{key}");
            if is_env_var_name(&key) {
                vars.set(&key, value.clone());
            } else {
                skipped.push(key);
            }
        }
        if !skipped.is_empty() {
            skipped.sort();
            invalid_keys.push(InvalidKeys {
                kind,
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                keys: skipped,
            });
        }
    }

    for var in container.env.iter().flatten() {
        let value = match (var.value.as_deref(), &var.value_from) {
            (Some(v), _) if !v.is_empty() => expand_bytes(v, &|n| vars.get(n)),
            (_, Some(src)) => match value_from(pod, container, src, sources, ctx, namespace)? {
                Some(v) => v,
                None => continue,
            },
            (_, None) => Vec::new(),
        };
        vars.set(&var.name, value);
    }

    if let Some((name, _)) = vars.list.iter().find(|(_, v)| v.contains(&0)) {
        return Err(ConfigError::NulInEnv { name: name.clone() });
    }
    Ok(ResolvedEnv {
        vars: vars.list,
        invalid_keys,
    })
}

/// `command` or `args` with `$(VAR)` expanded against the resolved environment (kubelet's
/// `ExpandContainerCommandAndArgs`).
pub(crate) fn expand_args(list: &[String], env: &ResolvedEnv) -> Vec<String> {
    let map: HashMap<&str, &[u8]> = env
        .vars
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    let lookup = |name: &str| {
        map.get(name)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    list.iter().map(|item| expand(item, &lookup)).collect()
}

/// The variables defined so far: each name once, at its first position, with its last value.
#[derive(Default)]
struct Vars {
    list: Vec<(String, Vec<u8>)>,
    index: HashMap<String, usize>,
}

impl Vars {
    fn set(&mut self, name: &str, value: Vec<u8>) {
        match self.index.get(name) {
            Some(&i) => self.list[i].1 = value,
            None => {
                self.index.insert(name.to_owned(), self.list.len());
                self.list.push((name.to_owned(), value));
            }
        }
    }

    fn get(&self, name: &str) -> Option<&[u8]> {
        self.index.get(name).map(|&i| self.list[i].1.as_slice())
    }
}

/// The object an `envFrom` entry names; `None` when it names none.
fn env_from_source(from: &EnvFromSource) -> Option<(ObjectKind, &str, bool)> {
    if let Some(cm) = &from.config_map_ref {
        return Some((ObjectKind::ConfigMap, &cm.name, cm.optional == Some(true)));
    }
    from.secret_ref.as_ref().map(|s| {
        (
            ObjectKind::Secret,
            s.name.as_str(),
            s.optional == Some(true),
        )
    })
}

/// The object's data; `Ok(None)` when it is missing and optional.
fn object<'s>(
    sources: &'s Sources,
    kind: ObjectKind,
    name: &str,
    optional: bool,
) -> Result<Option<&'s ObjectData>, ConfigError> {
    match sources.get(kind, name) {
        Some(data) => Ok(Some(data)),
        None if optional => Ok(None),
        None => Err(ConfigError::MissingObject {
            kind,
            name: name.to_owned(),
        }),
    }
}

/// A `valueFrom`'s value; `Ok(None)` when an optional object or key is missing.
fn value_from(
    pod: &Pod,
    container: &Container,
    src: &EnvVarSource,
    sources: &Sources,
    ctx: &DownwardContext,
    namespace: &str,
) -> Result<Option<Vec<u8>>, ConfigError> {
    let key_ref = |kind: ObjectKind, name: &str, key: &str, optional: Option<bool>| {
        let optional = optional == Some(true);
        let Some(data) = object(sources, kind, name, optional)? else {
            return Ok(None);
        };
        match data.get(key) {
            Some(v) => Ok(Some(v.clone())),
            None if optional => Ok(None),
            None => Err(ConfigError::MissingKey {
                kind,
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                key: key.to_owned(),
            }),
        }
    };
    if let Some(f) = &src.field_ref {
        return field_ref_value(pod, ctx, f).map(|v| Some(v.into_bytes()));
    }
    if let Some(r) = &src.resource_field_ref {
        let target = match r.container_name.as_deref() {
            None | Some("") => container,
            Some(name) => find_container(pod, name).ok_or_else(|| {
                ConfigError::InvalidReference(format!("container {name} not found"))
            })?,
        };
        return resource_value(target, ctx, &r.resource, r.divisor.as_ref())
            .map(|v| Some(v.into_bytes()));
    }
    if let Some(cm) = &src.config_map_key_ref {
        return key_ref(ObjectKind::ConfigMap, &cm.name, &cm.key, cm.optional);
    }
    if let Some(s) = &src.secret_key_ref {
        return key_ref(ObjectKind::Secret, &s.name, &s.key, s.optional);
    }
    if src.file_key_ref.is_some() {
        return Err(ConfigError::InvalidReference(
            "fileKeyRef is not supported".into(),
        ));
    }
    // No source set: kubelet defines the variable as empty.
    Ok(Some(Vec::new()))
}

/// A container or init container of the Pod by name (kubelet's `findContainerInPod`).
fn find_container<'p>(pod: &'p Pod, name: &str) -> Option<&'p Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
}

/// Kubelet 1.28's `IsEnvVarName`.
fn is_env_var_name(name: &str) -> bool {
    let allowed = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_');
    match name.as_bytes() {
        [] => false,
        [first, rest @ ..] => {
            !first.is_ascii_digit()
                && allowed(*first)
                && rest.iter().all(|c| allowed(*c))
                && name != "."
                && !name.starts_with("..")
        }
    }
}

#[cfg(test)]
mod tests;
