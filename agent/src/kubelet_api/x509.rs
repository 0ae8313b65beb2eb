//! PURE: the user a verified client certificate names, as kubelet's x509 authenticator reads
//! it: user = the subject's CommonName, groups = its Organization values, in order.
//!
//! rustls has already verified the chain against the client CA (and the `clientAuth` usage)
//! when this runs; this only walks the DER far enough to reach the subject. It is a minimal
//! reader of the fields it needs, not a general X.509 parser.

/// OID 2.5.4.3 (commonName), content bytes.
const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
/// OID 2.5.4.10 (organizationName), content bytes.
const OID_O: &[u8] = &[0x55, 0x04, 0x0a];

/// The subject's CommonName and Organization values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subject {
    /// CN (empty when absent).
    pub common_name: String,
    /// O values, in certificate order.
    pub organizations: Vec<String>,
}

/// One DER element: tag and content.
pub(super) struct Tlv<'a> {
    pub(super) tag: u8,
    pub(super) content: &'a [u8],
}

/// Reads one element from the front of `buf`; returns it and the rest.
pub(super) fn next(buf: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
    let (&tag, rest) = buf.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let (bytes, r) = rest.split_at(n);
        rest = r;
        bytes.iter().fold(0usize, |a, b| (a << 8) | usize::from(*b))
    };
    if rest.len() < len {
        return None;
    }
    let (content, rest) = rest.split_at(len);
    Some((Tlv { tag, content }, rest))
}

/// All elements of a constructed value's content.
pub(super) fn children(mut buf: &[u8]) -> Option<Vec<Tlv<'_>>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let (t, rest) = next(buf)?;
        out.push(t);
        buf = rest;
    }
    Some(out)
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// `[0] EXPLICIT Version` at the start of a v3 TBSCertificate.
const VERSION_TAG: u8 = 0xa0;

/// The subject of a DER certificate; `None` when it is not shaped like one.
pub fn subject(der: &[u8]) -> Option<Subject> {
    let (cert, _) = next(der)?;
    if cert.tag != SEQUENCE {
        return None;
    }
    let (tbs, _) = next(cert.content)?;
    let fields = children(tbs.content)?;
    // version?, serialNumber, signature, issuer, validity, subject
    let skip = usize::from(fields.first()?.tag == VERSION_TAG);
    let name = fields.get(skip + 4)?;
    if name.tag != SEQUENCE {
        return None;
    }
    let mut out = Subject::default();
    for rdn in children(name.content)? {
        if rdn.tag != SET {
            return None;
        }
        for atv in children(rdn.content)? {
            let parts = children(atv.content)?;
            let (oid, value) = (parts.first()?, parts.get(1)?);
            if oid.tag != OID {
                return None;
            }
            let text = String::from_utf8_lossy(value.content).into_owned();
            if oid.content == OID_CN {
                out.common_name = text;
            } else if oid.content == OID_O {
                out.organizations.push(text);
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DER element with a short or long length.
    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        if content.len() < 0x80 {
            v.push(content.len() as u8);
        } else {
            v.push(0x82);
            v.extend_from_slice(&(content.len() as u16).to_be_bytes());
        }
        v.extend_from_slice(content);
        v
    }

    fn atv(oid: &[u8], value: &str) -> Vec<u8> {
        let mut c = tlv(OID, oid);
        c.extend(tlv(0x0c, value.as_bytes()));
        tlv(SET, &tlv(SEQUENCE, &c))
    }

    fn cert(version: bool, subject_rdns: &[Vec<u8>]) -> Vec<u8> {
        let mut tbs = Vec::new();
        if version {
            tbs.extend(tlv(VERSION_TAG, &tlv(0x02, &[2])));
        }
        tbs.extend(tlv(0x02, &[1; 16])); // serial
        tbs.extend(tlv(SEQUENCE, &tlv(OID, &[0x2a, 0x86, 0x48]))); // signature algorithm
        tbs.extend(tlv(SEQUENCE, &atv(OID_CN, "issuer-ca"))); // issuer
        tbs.extend(tlv(SEQUENCE, &[0u8; 200])); // validity (long length)
        tbs.extend(tlv(SEQUENCE, &subject_rdns.concat()));
        let mut body = tlv(SEQUENCE, &tbs);
        body.extend(tlv(SEQUENCE, &[]));
        tlv(SEQUENCE, &body)
    }

    #[test]
    fn cn_is_the_user_and_every_o_a_group() {
        let der = cert(
            true,
            &[
                atv(OID_O, "system:masters"),
                atv(OID_O, "ops"),
                atv(OID_CN, "kube-apiserver-kubelet-client"),
            ],
        );
        let s = subject(&der).unwrap();
        assert_eq!(s.common_name, "kube-apiserver-kubelet-client");
        assert_eq!(s.organizations, ["system:masters", "ops"]);
    }

    #[test]
    fn a_v1_certificate_without_version_field_is_read_too() {
        let s = subject(&cert(false, &[atv(OID_CN, "alice")])).unwrap();
        assert_eq!(s.common_name, "alice");
        assert!(s.organizations.is_empty());
    }

    #[test]
    fn the_issuer_name_is_not_taken_for_the_subject() {
        let s = subject(&cert(true, &[atv(OID_O, "team")])).unwrap();
        assert_eq!(s.common_name, "");
    }

    #[test]
    fn truncated_or_foreign_bytes_are_refused() {
        let der = cert(true, &[atv(OID_CN, "alice")]);
        assert_eq!(subject(&der[..der.len() / 2]), None);
        assert_eq!(subject(b"not a certificate"), None);
        assert_eq!(subject(&[]), None);
    }
}
