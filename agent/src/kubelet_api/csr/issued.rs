//! PURE: what the agent needs to know about an issued serving certificate — its validity,
//! whose it is and which names it carries — and the two decisions made from that: may a
//! stored certificate still be served ([`fit`]), and when is it renewed
//! ([`rotation_deadline`], kubelet's certificate manager rule).

use std::{
    net::IpAddr,
    time::{Duration, SystemTime},
};

use super::request::{OID_SAN, SAN_DNS, SAN_IP, Sans, node_user};
use crate::kubelet_api::x509::{self, children, next};

/// The facts of a leaf certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    /// Start of validity.
    pub not_before: SystemTime,
    /// End of validity.
    pub not_after: SystemTime,
    /// Subject CommonName.
    pub common_name: String,
    /// subjectAltNames (DNS and IP; other kinds are ignored).
    pub sans: Sans,
}

const SEQUENCE: u8 = 0x30;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
const BOOLEAN: u8 = 0x01;
const OCTET_STRING: u8 = 0x04;
/// `[0] EXPLICIT Version`.
const VERSION_TAG: u8 = 0xa0;
/// `[3] EXPLICIT Extensions`.
const EXTENSIONS_TAG: u8 = 0xa3;

/// The facts of DER certificate `der`; `None` when it is not shaped like one.
pub fn leaf(der: &[u8]) -> Option<Leaf> {
    let (cert, _) = next(der)?;
    let (tbs, _) = next(cert.content)?;
    let fields = children(tbs.content)?;
    let skip = usize::from(fields.first()?.tag == VERSION_TAG);
    let validity = children(fields.get(skip + 3)?.content)?;
    let (not_before, not_after) = (time(validity.first()?)?, time(validity.get(1)?)?);
    let common_name = x509::subject(der)?.common_name;
    let mut sans = Sans::default();
    if let Some(ext) = fields.iter().find(|f| f.tag == EXTENSIONS_TAG) {
        let (list, _) = next(ext.content)?;
        for e in children(list.content)? {
            let parts = children(e.content)?;
            if parts.first()?.content != OID_SAN {
                continue;
            }
            let value = parts.iter().skip(1).find(|p| p.tag != BOOLEAN)?;
            if value.tag != OCTET_STRING {
                return None;
            }
            let (names, _) = next(value.content)?;
            if names.tag != SEQUENCE {
                return None;
            }
            for n in children(names.content)? {
                match n.tag {
                    SAN_DNS => sans
                        .dns
                        .push(String::from_utf8_lossy(n.content).into_owned()),
                    SAN_IP => sans.ips.extend(ip(n.content)),
                    _ => {}
                }
            }
        }
    }
    Some(Leaf {
        not_before,
        not_after,
        common_name,
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

/// UTCTime (`YYMMDDHHMMSSZ`, years 1950–2049) or GeneralizedTime (`YYYYMMDDHHMMSSZ`).
fn time(t: &x509::Tlv<'_>) -> Option<SystemTime> {
    let s = std::str::from_utf8(t.content).ok()?.strip_suffix('Z')?;
    let (year, rest) = match t.tag {
        UTC_TIME if s.len() == 12 => {
            let yy: i64 = s.get(..2)?.parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &s[2..])
        }
        GENERALIZED_TIME if s.len() == 14 => (s.get(..4)?.parse().ok()?, &s[4..]),
        _ => return None,
    };
    let num = |i: usize| -> Option<i64> { rest.get(i..i + 2)?.parse().ok() };
    let (month, day, h, m, sec) = (num(0)?, num(2)?, num(4)?, num(6)?, num(8)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec;
    let secs = u64::try_from(secs).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Why a stored certificate is not served again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfit {
    /// Past its end (or not yet valid).
    Expired,
    /// Issued for another node.
    OtherNode,
    /// Lacks one of the Node's current addresses.
    MissingName,
}

impl Unfit {
    /// Log value.
    pub fn as_str(self) -> &'static str {
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
pub fn fit(leaf: &Leaf, node: &str, want: &Sans, now: SystemTime) -> Result<(), Unfit> {
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
pub fn rotation_deadline(not_before: SystemTime, not_after: SystemTime, draw: f64) -> SystemTime {
    let total = not_after
        .duration_since(not_before)
        .unwrap_or(Duration::ZERO);
    not_before + total.mul_f64(0.7 + 0.2 * draw.clamp(0.0, 1.0))
}

#[cfg(test)]
#[path = "issued_tests.rs"]
mod tests;
