//! Which VM profile a Pod's VM runs with: `spec.runtimeClassName` → the cluster-scoped
//! RuntimeClass → its `handler` → this agent's profile of that name (docs/pods.md, "VM
//! profiles"). [`choose`] is the pure decision; [`classes`] keeps the RuntimeClasses in a
//! watch cache, as kubelet's RuntimeClass manager does, so a lookup costs no API request.
//!
//! A Pod whose RuntimeClass does not exist (yet), or whose handler this agent has no profile
//! for, waits: no VM is made for it (never one with another network), its container waits in `ContainerCreating` and a `FailedCreatePodSandBox`
//! Warning says why — kubelet's words for a sandbox it cannot create. The RuntimeClass's
//! `overhead` and `scheduling` are the API server's and the scheduler's business, not the
//! agent's.

pub(crate) mod classes;

use std::collections::BTreeMap;

use crate::config::{VmProfile, VmProfiles};

/// Why a Pod's VM cannot be made with a profile now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProfileWait {
    /// The RuntimeClass the Pod names does not exist (or the cache has not listed yet).
    ClassNotFound {
        /// `spec.runtimeClassName`.
        class: String,
    },
    /// The RuntimeClass's handler is not one of this agent's profiles.
    Unserved { class: String, handler: String },
    /// The profile is configured but this Mac cannot run it now (a host check says why); the
    /// Pod starts after a host check finds it runnable again.
    Unavailable { handler: String, why: String },
}

impl ProfileWait {
    /// The message of the Warning event (after `Failed to create pod sandbox: `) and of the
    /// waiting container: kubelet's NotFound wording for a missing RuntimeClass,
    /// containerd's for a handler it has no runtime for.
    pub(crate) fn message(&self) -> String {
        match self {
            Self::ClassNotFound { class } => {
                format!("runtimeclass.node.k8s.io \"{class}\" not found")
            }
            Self::Unserved { class, handler } => format!(
                "no VM profile for handler \"{handler}\" (RuntimeClass \"{class}\") is \
                 configured on this node"
            ),
            Self::Unavailable { handler, why } => {
                format!("VM profile \"{handler}\" is unavailable on this node: {why}")
            }
        }
    }
}

/// What a lookup of one RuntimeClass found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClassLookup {
    /// The RuntimeClass exists with this handler.
    Handler(String),
    /// No such RuntimeClass.
    NotFound,
}

/// The profile for a Pod with `class` (its `spec.runtimeClassName`; `None` or empty = the
/// default profile), given what the RuntimeClass cache says, the configured profiles and
/// those this Mac cannot run now (`unavailable`: handler → why). Pure.
///
/// # Errors
/// [`ProfileWait`] saying why the Pod waits.
pub(crate) fn choose(
    class: Option<&str>,
    lookup: impl FnOnce(&str) -> ClassLookup,
    profiles: &VmProfiles,
    unavailable: &BTreeMap<String, String>,
) -> Result<VmProfile, ProfileWait> {
    let runnable = |handler: &str, profile: VmProfile| match unavailable.get(handler) {
        Some(why) => Err(ProfileWait::Unavailable {
            handler: handler.to_owned(),
            why: why.clone(),
        }),
        None => Ok(profile),
    };
    let Some(class) = class.filter(|c| !c.is_empty()) else {
        return match profiles.default_profile() {
            (Some(h), p) => runnable(h, p),
            (None, p) => Ok(p),
        };
    };
    let handler = match lookup(class) {
        ClassLookup::Handler(h) => h,
        ClassLookup::NotFound => {
            return Err(ProfileWait::ClassNotFound {
                class: class.to_owned(),
            });
        }
    };
    match profiles.get(&handler) {
        Some(p) => runnable(&handler, p.clone()),
        None => Err(ProfileWait::Unserved {
            class: class.to_owned(),
            handler,
        }),
    }
}

#[cfg(test)]
mod tests;
