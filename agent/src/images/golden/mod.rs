//! Golden base VMs: one local VM per image digest, cloned once from the OCI cache, from which
//! every Pod's VM is cloned (a clonefile on APFS, so a Pod's clone costs neither a pull nor a
//! copy). Local VMs are never auto-pruned by Tart (docs/reference/tart-cli.md §4), so the agent
//! owns their life: the disk budget removes a golden with its digest when nothing needs it.
//!
//! A golden's name is `<prefix>golden-<first hex digits of the digest>`, as long as a Pod VM's
//! name, so any prefix valid for Pod VMs is valid here; it never parses as a Pod VM's name
//! (no UUID), so the orphan sweep leaves goldens alone.

use tart::VmName;

/// The infix between the agent's VM prefix and the digest's hex.
pub(crate) const GOLDEN_INFIX: &str = "golden-";

/// Hex digits of the digest kept in the name: a Pod VM's UUID is 36 bytes, the infix takes 7.
pub(crate) const GOLDEN_HEX: usize = 36 - GOLDEN_INFIX.len();

/// The golden VM for `digest` (`sha256:<64 hex>`), or `None` if it is not a sha256 digest or
/// the name would not be a valid VM name.
pub(crate) fn golden_name(prefix: &str, digest: &str) -> Option<VmName> {
    let hex = digest.strip_prefix("sha256:")?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    VmName::new(format!(
        "{prefix}{GOLDEN_INFIX}{}",
        &hex[..GOLDEN_HEX].to_ascii_lowercase()
    ))
    .ok()
}

/// The digest prefix a golden VM's name carries, when `vm` is a golden of this prefix.
pub(crate) fn golden_hex<'a>(prefix: &str, vm: &'a str) -> Option<&'a str> {
    let hex = vm.strip_prefix(prefix)?.strip_prefix(GOLDEN_INFIX)?;
    (hex.len() == GOLDEN_HEX && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

/// Whether the golden named by `hex` (from [`golden_hex`]) is the one for `digest`.
pub(crate) fn is_golden_of(hex: &str, digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|d| d.get(..GOLDEN_HEX) == Some(hex))
}

#[cfg(test)]
mod tests;
