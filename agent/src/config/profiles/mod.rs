//! VM profiles: what `tart run` gives a Pod's VM besides its shares — the network and the
//! root disk's options — named by the RuntimeClass `handler` that selects them
//! (docs/configuration.md, "VM profiles"). They come from the configuration file only
//! (`[vm_profiles.<handler>]` tables and `default_vm_profile`); [`resolve`] turns them into
//! [`VmProfiles`]. Pure: which profile a Pod gets is the Pod side's decision, whether this Mac
//! can run one the host checks'.

use std::{
    collections::BTreeMap,
    net::{Ipv4Addr, Ipv6Addr},
};

use serde::Deserialize;
use tart::{DiskCaching, DiskSync, Network, RootDiskOpts};

/// A bad profile, or a `default_vm_profile` that names none; the configuration's error says
/// which setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProfileError {
    /// A key of `[vm_profiles.<profile>]` (or its name) has an unusable value.
    Field {
        profile: String,
        field: &'static str,
        message: String,
    },
    /// `default_vm_profile` names no profile.
    NoSuchDefault(String),
}

/// One `[vm_profiles.<handler>]` table as written; [`resolve`] checks it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProfileArgs {
    /// `shared`, `softnet`, `bridged:<interface>` or `host`.
    pub(crate) network: Option<String>,
    /// Softnet: CIDRs the VM may reach although softnet blocks them by default.
    pub(crate) softnet_allow: Option<Vec<String>>,
    /// Softnet: CIDRs the VM may not reach.
    pub(crate) softnet_block: Option<Vec<String>>,
    /// Softnet: `<host port>:<guest port>` pairs forwarded into the VM.
    pub(crate) softnet_expose: Option<Vec<String>>,
    /// `full`, `fsync` or `none`.
    pub(crate) root_disk_sync: Option<String>,
    /// `automatic`, `cached` or `uncached`.
    pub(crate) root_disk_caching: Option<String>,
}

/// What `tart run` gives a VM of one profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VmProfile {
    pub(crate) network: Network,
    pub(crate) root_disk: RootDiskOpts,
}

/// The configured profiles by handler, and the one Pods without a RuntimeClass get.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VmProfiles {
    by_handler: BTreeMap<String, VmProfile>,
    /// `default_vm_profile`; `None` = the built-in default (shared NAT, Tart's disk defaults).
    default: Option<String>,
}

impl VmProfiles {
    /// Profiles as given, unchecked (tests build them directly).
    #[cfg(test)]
    pub(crate) fn new(by_handler: BTreeMap<String, VmProfile>, default: Option<String>) -> Self {
        Self {
            by_handler,
            default,
        }
    }

    /// The profile of `handler`, if this agent has one.
    pub(crate) fn get(&self, handler: &str) -> Option<&VmProfile> {
        self.by_handler.get(handler)
    }

    /// The handlers with a profile, in name order.
    pub(crate) fn handlers(&self) -> impl Iterator<Item = (&str, &VmProfile)> {
        self.by_handler.iter().map(|(h, p)| (h.as_str(), p))
    }

    /// The profile of Pods without a RuntimeClass: its handler (`None` for the built-in one)
    /// and what it is.
    pub(crate) fn default_profile(&self) -> (Option<&str>, VmProfile) {
        match self.default.as_deref() {
            Some(h) => (Some(h), self.by_handler.get(h).cloned().unwrap_or_default()),
            None => (None, VmProfile::default()),
        }
    }
}

/// Check every profile and the default's name.
///
/// # Errors
/// [`ProfileError`] naming the first bad profile and field, or the default that names no
/// profile.
pub(crate) fn resolve(
    args: BTreeMap<String, ProfileArgs>,
    default: Option<String>,
) -> Result<VmProfiles, ProfileError> {
    let mut by_handler = BTreeMap::new();
    for (handler, a) in args {
        let profile = profile(&handler, a).map_err(|(field, message)| ProfileError::Field {
            profile: handler.clone(),
            field,
            message,
        })?;
        by_handler.insert(handler, profile);
    }
    if let Some(d) = &default
        && !by_handler.contains_key(d)
    {
        return Err(ProfileError::NoSuchDefault(d.clone()));
    }
    Ok(VmProfiles {
        by_handler,
        default,
    })
}

type FieldError = (&'static str, String);

fn profile(handler: &str, a: ProfileArgs) -> Result<VmProfile, FieldError> {
    if !is_dns_label(handler) {
        return Err((
            "name",
            "a profile is named by a RuntimeClass handler: a DNS label (at most 63 lowercase \
             letters, digits and '-', alphanumeric at both ends)"
                .into(),
        ));
    }
    let network = network(&a)?;
    let root_disk = RootDiskOpts {
        sync: a
            .root_disk_sync
            .as_deref()
            .map(|w| word("root_disk_sync", w, &DiskSync::ALL, |s| s.as_str()))
            .transpose()?,
        caching: a
            .root_disk_caching
            .as_deref()
            .map(|w| word("root_disk_caching", w, &DiskCaching::ALL, |c| c.as_str()))
            .transpose()?,
    };
    Ok(VmProfile { network, root_disk })
}

fn network(a: &ProfileArgs) -> Result<Network, FieldError> {
    let word = a.network.as_deref().unwrap_or("shared");
    let net = match word {
        "shared" => Network::Shared,
        "host" => Network::Host,
        "softnet" => Network::Softnet {
            allow: cidrs("softnet_allow", a.softnet_allow.as_deref())?,
            block: cidrs("softnet_block", a.softnet_block.as_deref())?,
            expose: ports(a.softnet_expose.as_deref())?,
        },
        w => match w.strip_prefix("bridged:") {
            Some(iface) if is_interface(iface) => Network::Bridged(iface.to_owned()),
            Some(iface) => {
                return Err((
                    "network",
                    format!(
                        "bridged interface {iface:?} is not an interface name (1 to 15 letters, \
                         digits and '.', e.g. en0)"
                    ),
                ));
            }
            None => {
                return Err((
                    "network",
                    format!("{w:?} is not one of shared, softnet, bridged:<interface>, host"),
                ));
            }
        },
    };
    if !matches!(net, Network::Softnet { .. }) {
        for (field, set) in [
            ("softnet_allow", &a.softnet_allow),
            ("softnet_block", &a.softnet_block),
            ("softnet_expose", &a.softnet_expose),
        ] {
            if set.is_some() {
                return Err((field, format!("needs network = \"softnet\", not {word:?}")));
            }
        }
    }
    Ok(net)
}

fn word<T: Copy>(
    field: &'static str,
    w: &str,
    all: &[T],
    name: impl Fn(T) -> &'static str,
) -> Result<T, FieldError> {
    all.iter().copied().find(|v| name(*v) == w).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|v| name(*v)).collect();
        (field, format!("{w:?} is not one of {}", names.join(", ")))
    })
}

/// An IPv4 or IPv6 CIDR, `address/prefix`.
fn cidrs(field: &'static str, list: Option<&[String]>) -> Result<Vec<String>, FieldError> {
    let list = list.unwrap_or_default();
    for c in list {
        let ok = c.split_once('/').is_some_and(|(ip, len)| {
            let len = len.parse::<u8>().ok();
            match (ip.parse::<Ipv4Addr>(), ip.parse::<Ipv6Addr>(), len) {
                (Ok(_), _, Some(l)) => l <= 32,
                (_, Ok(_), Some(l)) => l <= 128,
                _ => false,
            }
        });
        if !ok {
            return Err((
                field,
                format!("{c:?} is not a CIDR (address/prefix, e.g. 10.0.0.0/8)"),
            ));
        }
    }
    Ok(list.to_vec())
}

/// `<host port>:<guest port>` pairs, each port 1 to 65535.
fn ports(list: Option<&[String]>) -> Result<Vec<String>, FieldError> {
    let list = list.unwrap_or_default();
    let port = |p: &str| p.parse::<u16>().is_ok_and(|p| p > 0) && !p.starts_with('+');
    for e in list {
        if !e.split_once(':').is_some_and(|(h, g)| port(h) && port(g)) {
            return Err((
                "softnet_expose",
                format!("{e:?} is not <host port>:<guest port> (e.g. 2222:22)"),
            ));
        }
    }
    Ok(list.to_vec())
}

/// A RuntimeClass `handler`: an RFC 1123 label.
pub(crate) fn is_dns_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A macOS network interface name (`en0`, `bridge100`): shorter than `IFNAMSIZ` (16).
fn is_interface(s: &str) -> bool {
    (1..=15).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
}

#[cfg(test)]
mod tests;
