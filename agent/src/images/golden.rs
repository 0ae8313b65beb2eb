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
pub const GOLDEN_INFIX: &str = "golden-";

/// Hex digits of the digest kept in the name: a Pod VM's UUID is 36 bytes, the infix takes 7.
pub const GOLDEN_HEX: usize = 36 - GOLDEN_INFIX.len();

/// The golden VM for `digest` (`sha256:<64 hex>`), or `None` if it is not a sha256 digest or
/// the name would not be a valid VM name.
pub fn golden_name(prefix: &str, digest: &str) -> Option<VmName> {
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
pub fn golden_hex<'a>(prefix: &str, vm: &'a str) -> Option<&'a str> {
    let hex = vm.strip_prefix(prefix)?.strip_prefix(GOLDEN_INFIX)?;
    (hex.len() == GOLDEN_HEX && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

/// Whether the golden named by `hex` (from [`golden_hex`]) is the one for `digest`.
pub fn is_golden_of(hex: &str, digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|d| d.get(..GOLDEN_HEX) == Some(hex))
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_golden_is_named_from_its_digest_and_fits_any_pod_prefix() {
        let g = golden_name("tkl-", D).unwrap();
        assert_eq!(g.as_str(), "tkl-golden-0123456789abcdef0123456789abc");
        // The longest prefix a Pod VM allows still gives a valid golden name.
        let long = "p".repeat(VmName::MAX_LEN - 36);
        let g = golden_name(&long, D).unwrap();
        assert_eq!(g.as_str().len(), VmName::MAX_LEN);
        assert!(golden_name(&format!("{long}x"), D).is_none());
    }

    #[test]
    fn only_sha256_digests_name_goldens() {
        for bad in [
            "",
            "sha256:abc",
            "sha512:00",
            "latest",
            &D.replace('a', "g"),
        ] {
            assert_eq!(golden_name("tkl-", bad), None, "{bad}");
        }
    }

    #[test]
    fn golden_names_are_recognised_and_matched_to_their_digest() {
        let g = golden_name("tkl-", D).unwrap();
        let hex = golden_hex("tkl-", g.as_str()).unwrap();
        assert!(is_golden_of(hex, D));
        assert!(!is_golden_of(hex, &D.replace('0', "f")));
        // A Pod VM and another prefix's golden are not ours.
        assert_eq!(
            golden_hex("tkl-", "tkl-8c2f1e0a-1111-2222-3333-444455556666"),
            None
        );
        assert_eq!(golden_hex("other-", g.as_str()), None);
    }
}
