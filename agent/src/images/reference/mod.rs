//! Container image references and the pull decision.
//!
//! A Pod's image must be a *remote* Tart name, `host[:port]/namespace[/…][:tag|@sha256:hex]`
//! (docs/reference/tart-cli.md §1.6): anything else would be taken by Tart as a local VM name,
//! which a Pod must never be able to clone from. The pull decision follows `imagePullPolicy` as
//! kubelet does. Pure; no I/O.

use std::fmt;

/// A validated remote image reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ImageRef {
    raw: String,
    /// `host[:port]`.
    pub host: String,
    /// Repository path below the host.
    pub repository: String,
    /// Tag, when given (and no digest).
    pub tag: Option<String>,
    /// `sha256:<hex>`, when given.
    pub digest: Option<String>,
}

/// Why an image string is not a usable reference (kubelet's `InvalidImageName`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "image {image:?} is not a remote OCI reference (host/repository[:tag|@sha256:digest]): {why}"
)]
pub(crate) struct InvalidImage {
    /// The image as given.
    pub image: String,
    /// The rule it breaks.
    pub why: &'static str,
}

fn component_ok(c: &str) -> bool {
    c.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && c.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        })
}

fn tag_ok(t: &str) -> bool {
    !t.is_empty()
        && t.len() <= 128
        && !t.starts_with(['.', '-'])
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn digest_ok(d: &str) -> bool {
    let hex = d.strip_prefix("sha256:").unwrap_or("");
    hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl ImageRef {
    /// Parse and validate.
    ///
    /// # Errors
    /// [`InvalidImage`] naming the broken rule.
    pub(crate) fn parse(image: &str) -> Result<Self, InvalidImage> {
        let bad = |why| InvalidImage {
            image: image.to_owned(),
            why,
        };
        if image.is_empty() {
            return Err(bad("it is empty"));
        }
        if image.len() > 512 {
            return Err(bad("it is longer than 512 bytes"));
        }
        let (host, rest) = image
            .split_once('/')
            .ok_or_else(|| bad("it has no registry host"))?;
        let (host_name, port) = match host.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host, None),
        };
        let host_ok = !host_name.is_empty()
            && !host_name.starts_with(['-', '.'])
            && host_name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
        if !host_ok || !(host_name.contains('.') || host_name == "localhost" || port.is_some()) {
            return Err(bad(
                "the registry host is not a host name (it needs a dot, a port or to be localhost)",
            ));
        }
        if port
            .is_some_and(|p| p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(bad("the registry port is not a number"));
        }
        let (path, digest) = match rest.split_once('@') {
            Some((p, d)) => (p, Some(d)),
            None => (rest, None),
        };
        let (repository, tag) = match (digest, path.rsplit_once(':')) {
            (None, Some((r, t))) if !t.contains('/') => (r, Some(t)),
            _ => (path, None),
        };
        if !repository.split('/').all(component_ok) {
            return Err(bad(
                "the repository must be lowercase [a-z0-9._-] components separated by '/'",
            ));
        }
        if tag.is_some_and(|t| !tag_ok(t)) {
            return Err(bad("the tag must be 1-128 characters of [A-Za-z0-9._-]"));
        }
        if digest.is_some_and(|d| !digest_ok(d)) {
            return Err(bad(
                "the digest must be sha256: and 64 lowercase hex digits",
            ));
        }
        Ok(Self {
            raw: image.to_owned(),
            host: host.to_owned(),
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest: digest.map(str::to_owned),
        })
    }

    /// The reference exactly as the Pod gave it (what is passed to `tart pull`/`clone`).
    pub(crate) fn as_str(&self) -> &str {
        &self.raw
    }

    /// The name `tart list` shows for this image in the OCI cache: `host/repo:tag` (tag
    /// defaults to `latest`) or `host/repo@sha256:…`.
    pub(crate) fn cache_name(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(d), _) => format!("{}/{}@{d}", self.host, self.repository),
            (None, Some(t)) => format!("{}/{}:{t}", self.host, self.repository),
            (None, None) => format!("{}/{}:latest", self.host, self.repository),
        }
    }

    /// Kubernetes' default policy: `Always` for `:latest` or no tag, else `IfNotPresent`.
    pub(crate) fn default_pull_policy(&self) -> PullPolicy {
        match (&self.digest, self.tag.as_deref()) {
            (None, None | Some("latest")) => PullPolicy::Always,
            _ => PullPolicy::IfNotPresent,
        }
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// The cache names (`host/repo:tag`, `host/repo@sha256:…`) of every container image these
/// Pods use: what the disk budget must never evict. Unparsable images name nothing cached.
pub(crate) fn cache_names(
    pods: &[std::sync::Arc<k8s_openapi::api::core::v1::Pod>],
) -> std::collections::BTreeSet<String> {
    pods.iter()
        .filter_map(|p| p.spec.as_ref())
        .flat_map(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
        })
        .filter_map(|c| c.image.as_deref())
        .filter_map(|i| ImageRef::parse(i).ok())
        .map(|r| r.cache_name())
        .collect()
}

/// `imagePullPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PullPolicy {
    /// Pull every time a VM is provisioned.
    Always,
    /// Pull when the image is not in Tart's OCI cache.
    IfNotPresent,
    /// Never pull; fail with `ErrImageNeverPull` when it is not cached.
    Never,
}

impl PullPolicy {
    /// From the Pod field; `None` or an unknown value falls back to the image's default.
    pub(crate) fn from_field(field: Option<&str>, image: &ImageRef) -> Self {
        match field {
            Some("Always") => Self::Always,
            Some("IfNotPresent") => Self::IfNotPresent,
            Some("Never") => Self::Never,
            _ => image.default_pull_policy(),
        }
    }
}

/// What to do about the image before cloning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PullDecision {
    /// Run `tart pull`.
    Pull,
    /// Cached and allowed to use: clone directly (kubelet's "already present on machine").
    UseCached,
    /// `Never` and not cached: `ErrImageNeverPull`.
    NeverPullMissing,
}

/// Decide from the policy and whether the image is in the OCI cache.
pub(crate) fn pull_decision(policy: PullPolicy, cached: bool) -> PullDecision {
    match (policy, cached) {
        (PullPolicy::Always, _) | (PullPolicy::IfNotPresent, false) => PullDecision::Pull,
        (_, true) => PullDecision::UseCached,
        (PullPolicy::Never, false) => PullDecision::NeverPullMissing,
    }
}

#[cfg(test)]
mod tests;
