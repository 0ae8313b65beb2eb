//! Deterministic VM names: `<prefix><pod uid>`.
//!
//! The name carries only the Pod UID (a Pod name or namespace may be 253 bytes, Tart names
//! are limited to [`tart::VmName::MAX_LEN`]) behind our own prefix, so adoption after a restart
//! and garbage collection can recognise our VMs and nothing else: a name is ours only if it is
//! exactly the prefix followed by a lowercase RFC 4122 UUID. Pure; no I/O.

use tart::VmName;

/// Default prefix, short enough to leave the UUID readable in `tart list`.
pub const DEFAULT_PREFIX: &str = "tkl-";

/// Length of a textual UUID (`8-4-4-4-12`).
const UUID_LEN: usize = 36;

/// Maps Pod UIDs to VM names and back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VmNaming {
    prefix: String,
}

/// Why a prefix or UID cannot make a VM name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NamingError {
    /// The prefix is empty, too long, or uses characters Tart rejects.
    #[error("VM name prefix {prefix:?} is invalid: {why}")]
    BadPrefix {
        /// The prefix given.
        prefix: String,
        /// The rule it breaks.
        why: String,
    },
    /// The Pod UID is not a UUID (the API server always assigns one).
    #[error("pod UID {0:?} is not a UUID")]
    BadUid(String),
}

impl VmNaming {
    /// Longest prefix that still leaves room for a UUID.
    pub(crate) const MAX_PREFIX_LEN: usize = VmName::MAX_LEN - UUID_LEN;

    /// A naming scheme with this prefix.
    ///
    /// # Errors
    /// [`NamingError::BadPrefix`] when the prefix is empty, longer than
    /// [`Self::MAX_PREFIX_LEN`], or would not form a valid [`VmName`].
    pub(crate) fn new(prefix: impl Into<String>) -> Result<Self, NamingError> {
        let prefix = prefix.into();
        let bad = |why: &str| NamingError::BadPrefix {
            prefix: prefix.clone(),
            why: why.to_owned(),
        };
        if prefix.is_empty() {
            return Err(bad("it is empty; an empty prefix would claim other VMs"));
        }
        if prefix.len() > Self::MAX_PREFIX_LEN {
            return Err(bad(&format!(
                "it is longer than {} bytes",
                Self::MAX_PREFIX_LEN
            )));
        }
        // Validate with a sample UUID so the whole name obeys Tart's rules
        // (docs/reference/tart-cli.md §1.6).
        VmName::new(format!("{prefix}00000000-0000-0000-0000-000000000000"))
            .map_err(|e| bad(&e))?;
        Ok(Self { prefix })
    }

    /// The VM name for a Pod UID.
    ///
    /// # Errors
    /// [`NamingError::BadUid`] when `uid` is not a UUID.
    pub(crate) fn vm_name(&self, uid: &str) -> Result<VmName, NamingError> {
        let uid = uid.to_ascii_lowercase();
        if !is_uuid(&uid) {
            return Err(NamingError::BadUid(uid));
        }
        VmName::new(format!("{}{uid}", self.prefix)).map_err(|_| NamingError::BadUid(uid))
    }

    /// The Pod UID a VM name stands for, or `None` when the VM is not one of ours.
    pub(crate) fn pod_uid<'a>(&self, vm: &'a str) -> Option<&'a str> {
        let uid = vm.strip_prefix(self.prefix.as_str())?;
        is_uuid(uid).then_some(uid)
    }

    /// The prefix every VM name of this scheme starts with.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether a VM name (from `tart list`) was created by this scheme.
    #[cfg(test)]
    pub(crate) fn is_ours(&self, vm: &str) -> bool {
        self.pod_uid(vm).is_some()
    }
}

/// The default prefix's naming, for tests: the agent's one naming is built from the checked
/// `--vm-name-prefix` by the configuration (`Config::vm_naming`).
#[cfg(test)]
impl Default for VmNaming {
    fn default() -> Self {
        Self {
            prefix: DEFAULT_PREFIX.to_owned(),
        }
    }
}

/// Lowercase `8-4-4-4-12` hex.
fn is_uuid(s: &str) -> bool {
    s.len() == UUID_LEN
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

#[cfg(test)]
mod tests;
