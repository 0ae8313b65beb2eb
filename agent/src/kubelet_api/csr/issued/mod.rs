//! PURE: what the agent needs to know about an issued serving certificate — its validity,
//! whose it is and which names it carries — and the two decisions made from that: may a
//! stored certificate still be served ([`fit`]), and when is it renewed
//! ([`rotation_deadline`], kubelet's certificate manager rule).

use std::{
    net::IpAddr,
    time::{Duration, SystemTime},
};

use x509_cert::ext::pkix::{SubjectAltName, name::GeneralName};

use super::request::{Sans, node_user};
use crate::kubelet_api::x509;

/// The facts of a leaf certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Leaf {
    /// Start of validity.
    pub not_before: SystemTime,
    /// End of validity.
    pub not_after: SystemTime,
    /// Subject CommonName.
    pub common_name: String,
    /// subjectAltNames (DNS and IP; other kinds are ignored).
    pub sans: Sans,
}

/// The facts of DER certificate `der`; `None` when it is not one, or its subjectAltName
/// extension does not decode.
pub(crate) fn leaf(der: &[u8]) -> Option<Leaf> {
    let cert = x509::certificate(der)?;
    let tbs = cert.tbs_certificate();
    let validity = tbs.validity();
    let mut sans = Sans::default();
    if let Some((_, SubjectAltName(names))) = tbs.get_extension::<SubjectAltName>().ok()? {
        for n in names {
            match n {
                GeneralName::DnsName(d) => sans.dns.push(d.to_string()),
                GeneralName::IpAddress(ip) => sans.ips.extend(self::ip(ip.as_bytes())),
                _ => {}
            }
        }
    }
    Some(Leaf {
        not_before: validity.not_before.to_system_time(),
        not_after: validity.not_after.to_system_time(),
        common_name: x509::names(tbs.subject()).common_name,
        sans,
    })
}

fn ip(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?)),
        _ => None,
    }
}

/// Why a stored certificate is not served again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unfit {
    /// Past its end (or not yet valid).
    Expired,
    /// Issued for another node.
    OtherNode,
    /// Lacks one of the Node's current addresses.
    MissingName,
}

impl Unfit {
    /// Log value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Expired => "expired",
            Self::OtherNode => "other_node",
            Self::MissingName => "missing_name",
        }
    }
}

/// Whether `leaf` may be served for `node` with addresses `want` at `now`: valid now, this
/// node's, and carrying every wanted name (kubelet requests a new certificate when the
/// Node's addresses are no longer covered).
pub(crate) fn fit(leaf: &Leaf, node: &str, want: &Sans, now: SystemTime) -> Result<(), Unfit> {
    if now < leaf.not_before || now >= leaf.not_after {
        return Err(Unfit::Expired);
    }
    if leaf.common_name != node_user(node) {
        return Err(Unfit::OtherNode);
    }
    let has_dns = want.dns.iter().all(|d| leaf.sans.dns.contains(d));
    let has_ips = want.ips.iter().all(|i| leaf.sans.ips.contains(i));
    if !(has_dns && has_ips) {
        return Err(Unfit::MissingName);
    }
    Ok(())
}

/// When to request the next certificate: at a uniformly drawn 70–90 % of the lifetime from
/// `not_before` (kubelet's `nextRotationDeadline`: `Jitter(total, 0.2) − 0.3 × total`), so
/// nodes issued together do not renew together. `draw` is in `[0, 1)`.
pub(crate) fn rotation_deadline(
    not_before: SystemTime,
    not_after: SystemTime,
    draw: f64,
) -> SystemTime {
    let total = not_after
        .duration_since(not_before)
        .unwrap_or(Duration::ZERO);
    not_before + total.mul_f64(0.7 + 0.2 * draw.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests;
