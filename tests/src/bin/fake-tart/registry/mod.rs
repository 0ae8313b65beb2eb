//! The fake registry: remote-name parsing (docs/reference/tart-cli.md §1.6), the manifest answer
//! for an image (404, 401 from the knobs and `TART_REGISTRY_*`,
//! docs/reference/tart-cli.md §1.2/§2.1) and the OCI cache layout
//! (`cache/OCIs/<host>/<ns>/<sha256:hex>/` plus a tag symlink, docs/reference/tart-cli.md §1.1).
//! Pure except the cache-path helpers, which only build paths.

use std::path::PathBuf;

use crate::error::Failure;
use crate::home::{Home, md5_hex};
use crate::knobs::{ImageKnob, Knobs};

/// A parsed remote name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Remote {
    pub host: String,
    pub namespace: String,
    pub reference: Reference,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reference {
    Tag(String),
    /// The hex part of `sha256:<hex>`.
    Digest(String),
}

/// Whether `name` is remote: anything containing `/` (docs/reference/tart-cli.md §1.6).
pub(crate) fn is_remote(name: &str) -> bool {
    name.contains('/')
}

impl Remote {
    /// Parses `host[:port]/namespace[/…][:tag|@sha256:hex]`, tag defaulting to `latest`.
    pub(crate) fn parse(name: &str) -> Result<Remote, Failure> {
        let bad =
            |detail: &str| Failure::runtime(format!("failed to parse remote name: {detail}"), 1);
        let (host, rest) = name.split_once('/').ok_or_else(|| bad(name))?;
        if host.is_empty() || rest.is_empty() {
            return Err(bad(name));
        }
        let (namespace, reference) = if let Some((ns, digest)) = rest.split_once('@') {
            let hex = digest.strip_prefix("sha256:").ok_or_else(|| bad(name))?;
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(name));
            }
            (ns.to_string(), Reference::Digest(hex.to_ascii_lowercase()))
        } else {
            let last_slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
            match rest[last_slash..].find(':') {
                Some(i) => {
                    let (ns, tag) = rest.split_at(last_slash + i);
                    (ns.to_string(), Reference::Tag(tag[1..].to_string()))
                }
                None => (rest.to_string(), Reference::Tag("latest".into())),
            }
        };
        let ns_ok = !namespace.is_empty()
            && namespace
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != "..");
        let ref_ok = match &reference {
            Reference::Tag(t) => !t.is_empty() && !t.contains('/'),
            Reference::Digest(_) => true,
        };
        if !ns_ok || !ref_ok {
            return Err(bad(name));
        }
        Ok(Remote {
            host: host.to_string(),
            namespace,
            reference,
        })
    }

    /// `host/ns:tag` or `host/ns@sha256:hex`.
    pub(crate) fn canonical(&self) -> String {
        match &self.reference {
            Reference::Tag(t) => format!("{}/{}:{t}", self.host, self.namespace),
            Reference::Digest(d) => format!("{}/{}@sha256:{d}", self.host, self.namespace),
        }
    }

    /// The image's knobs: its own entry (by the name as given or canonical) over "default".
    pub(crate) fn knob(&self, knobs: &Knobs, given: &str) -> ImageKnob {
        if knobs.images.contains_key(given) {
            knobs.image(given)
        } else {
            knobs.image(&self.canonical())
        }
    }

    /// The manifest digest (hex) the reference resolves to: a digest as given, or a stable
    /// fake digest of the tag (changed by the image knob `revision`).
    pub(crate) fn digest(&self, img: &ImageKnob) -> String {
        match &self.reference {
            Reference::Digest(d) => d.clone(),
            Reference::Tag(_) => {
                let seed = format!("{}#{}", self.canonical(), img.revision.unwrap_or(0));
                format!("{}{}", md5_hex(&seed), md5_hex(&format!("{seed}!")))
            }
        }
    }

    /// `<host>/<ns>@sha256:<hex>` of the resolved manifest.
    pub(crate) fn digest_name(&self, hex: &str) -> String {
        format!("{}/{}@sha256:{hex}", self.host, self.namespace)
    }

    /// `cache/OCIs/<host>/<ns>`, with `:` in the host percent-encoded.
    pub(crate) fn repo_dir(&self, home: &Home) -> PathBuf {
        home.oci()
            .join(self.host.replace(':', "%3A"))
            .join(&self.namespace)
    }

    /// `cache/OCIs/<host>`: the per-host pull lock.
    pub(crate) fn host_dir(&self, home: &Home) -> PathBuf {
        home.oci().join(self.host.replace(':', "%3A"))
    }
}

/// What the registry answers for the manifest of `remote` (docs/reference/tart-cli.md §2.1): 404 or
/// 401 as E2.
pub(crate) fn check_manifest(remote: &Remote, img: &ImageKnob) -> Result<(), Failure> {
    if img.missing == Some(true) {
        return Err(Failure::other(
            "UnexpectedHTTPStatusCode(when: \"pulling manifest\", code: 404, details: \"{\\\"errors\\\":[{\\\"code\\\":\\\"MANIFEST_UNKNOWN\\\",\\\"message\\\":\\\"manifest unknown\\\"}]}\")",
        ));
    }
    if let Some(auth) = &img.auth {
        let user = std::env::var("TART_REGISTRY_USERNAME").ok();
        let pass = std::env::var("TART_REGISTRY_PASSWORD").ok();
        // TART_REGISTRY_HOSTNAME restricts the credentials to one host
        // (docs/reference/tart-cli.md §1.2).
        let host_ok = std::env::var("TART_REGISTRY_HOSTNAME")
            .map(|h| h == remote.host)
            .unwrap_or(true);
        let ok = host_ok
            && user.as_deref() == Some(auth.username.as_str())
            && pass.as_deref() == Some(auth.password.as_str());
        if !ok {
            return Err(Failure::other(
                "AuthFailed(why: \"received unexpected HTTP status code 401 while retrieving an authentication token\", details: \"\")",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
