//! PURE (given a key): the ECDSA P-256 key and the PKCS#10 certificate request kubelet sends
//! for its certificates — subject `O=system:nodes, CN=system:node:<node>`; for the serving
//! certificate the Node's addresses as IP and DNS subjectAltNames, for the client certificate
//! none (the API server refuses a kubelet client request that carries any) — signed with the
//! key. The DER is
//! written by hand: the structure is fixed and small, and `ring` (already under rustls)
//! does the key generation and the signature.

use std::net::IpAddr;

use base64::Engine as _;
use ring::{
    rand::SystemRandom,
    signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _},
};

/// The Organization of every node's certificate.
pub(crate) const NODES_GROUP: &str = "system:nodes";

/// OID 2.5.4.3 (commonName), content bytes.
const OID_CN: &[u8] = &[0x55, 0x04, 0x03];
/// OID 2.5.4.10 (organizationName).
const OID_O: &[u8] = &[0x55, 0x04, 0x0a];
/// OID 1.2.840.10045.2.1 (id-ecPublicKey).
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// OID 1.2.840.10045.3.1.7 (prime256v1).
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// OID 1.2.840.10045.4.3.2 (ecdsa-with-SHA256).
const OID_ECDSA_SHA256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02];
/// OID 1.2.840.113549.1.9.14 (PKCS#9 extensionRequest).
const OID_EXTENSION_REQUEST: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x09, 0x0e];
/// OID 2.5.29.17 (subjectAltName).
pub(super) const OID_SAN: &[u8] = &[0x55, 0x1d, 0x11];

const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;
const OCTET_STRING: u8 = 0x04;
const OID: u8 = 0x06;
const UTF8_STRING: u8 = 0x0c;
const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
/// `[0] IMPLICIT` attributes of the request info.
const ATTRIBUTES: u8 = 0xa0;
/// GeneralName `[2] dNSName`.
pub(super) const SAN_DNS: u8 = 0x82;
/// GeneralName `[7] iPAddress`.
pub(super) const SAN_IP: u8 = 0x87;

/// The names a serving certificate must carry: the Node's addresses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Sans {
    /// DNS names.
    pub dns: Vec<String>,
    /// IP addresses.
    pub ips: Vec<IpAddr>,
}

/// Key material that could not be made or read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyError {
    /// The system random source failed.
    #[error("cannot generate an ECDSA P-256 key")]
    Generate,
    /// The stored key is not a PKCS#8 ECDSA P-256 key.
    #[error("the key is not a PKCS#8 ECDSA P-256 private key")]
    Parse,
    /// Signing failed.
    #[error("cannot sign the certificate request")]
    Sign,
}

/// An ECDSA P-256 key with its PKCS#8 encoding (what is stored and given to rustls).
pub(crate) struct ServingKey {
    pkcs8: Vec<u8>,
    pair: EcdsaKeyPair,
}

impl std::fmt::Debug for ServingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingKey")
            .field("fingerprint", &self.fingerprint())
            .finish_non_exhaustive()
    }
}

impl ServingKey {
    /// A new key from the system random source.
    ///
    /// # Errors
    /// [`KeyError::Generate`] when the random source fails.
    pub(crate) fn generate() -> Result<Self, KeyError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .map_err(|_| KeyError::Generate)?;
        Self::from_pkcs8(doc.as_ref())
    }

    /// The key in `pkcs8` (DER).
    ///
    /// # Errors
    /// [`KeyError::Parse`] for anything but a P-256 key.
    pub(crate) fn from_pkcs8(pkcs8: &[u8]) -> Result<Self, KeyError> {
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8, &SystemRandom::new())
                .map_err(|_| KeyError::Parse)?;
        Ok(Self {
            pkcs8: pkcs8.to_vec(),
            pair,
        })
    }

    /// PKCS#8 DER.
    pub(crate) fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The uncompressed public point (65 bytes).
    pub(crate) fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// First 8 hex digits of the SHA-256 of the public key: names the request made with it.
    pub(crate) fn fingerprint(&self) -> String {
        let d = ring::digest::digest(&ring::digest::SHA256, self.public_key());
        d.as_ref()[..4].iter().map(|b| format!("{b:02x}")).collect()
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, KeyError> {
        self.pair
            .sign(&SystemRandom::new(), msg)
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| KeyError::Sign)
    }
}

/// The user a node's serving certificate names.
pub(crate) fn node_user(node: &str) -> String {
    format!("system:node:{node}")
}

/// The DER PKCS#10 request for `node`'s certificate with `sans` (none: no subjectAltName
/// extension at all, as a client certificate request has), signed by `key`.
///
/// # Errors
/// [`KeyError::Sign`] when signing fails.
pub(crate) fn build(key: &ServingKey, node: &str, sans: &Sans) -> Result<Vec<u8>, KeyError> {
    // Go's pkix.Name order, as kubelet's request: O before CN.
    let subject = tlv(
        SEQUENCE,
        &[rdn(OID_O, NODES_GROUP), rdn(OID_CN, &node_user(node))].concat(),
    );
    let algorithm = tlv(
        SEQUENCE,
        &[tlv(OID, OID_EC_PUBLIC_KEY), tlv(OID, OID_P256)].concat(),
    );
    let spki = tlv(
        SEQUENCE,
        &[algorithm, bit_string(key.public_key())].concat(),
    );
    let names: Vec<u8> = sans
        .dns
        .iter()
        .map(|d| tlv(SAN_DNS, d.as_bytes()))
        .chain(sans.ips.iter().map(|ip| match ip {
            IpAddr::V4(v4) => tlv(SAN_IP, &v4.octets()),
            IpAddr::V6(v6) => tlv(SAN_IP, &v6.octets()),
        }))
        .collect::<Vec<_>>()
        .concat();
    let san = tlv(
        SEQUENCE,
        &[tlv(OID, OID_SAN), tlv(OCTET_STRING, &tlv(SEQUENCE, &names))].concat(),
    );
    let extension_request = match names.is_empty() {
        true => Vec::new(),
        false => tlv(
            SEQUENCE,
            &[
                tlv(OID, OID_EXTENSION_REQUEST),
                tlv(SET, &tlv(SEQUENCE, &san)),
            ]
            .concat(),
        ),
    };
    let info = tlv(
        SEQUENCE,
        &[
            tlv(INTEGER, &[0]),
            subject,
            spki,
            tlv(ATTRIBUTES, &extension_request),
        ]
        .concat(),
    );
    let signature = key.sign(&info)?;
    Ok(tlv(
        SEQUENCE,
        &[
            info,
            tlv(SEQUENCE, &tlv(OID, OID_ECDSA_SHA256)),
            bit_string(&signature),
        ]
        .concat(),
    ))
}

/// `der` as a PEM block with `label`, lines of 64 characters.
pub(crate) fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// One DER element.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    let len = content.len();
    if len < 0x80 {
        v.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        v.push(0x80 | (bytes.len() - skip) as u8);
        v.extend_from_slice(&bytes[skip..]);
    }
    v.extend_from_slice(content);
    v
}

/// A BIT STRING with no unused bits.
fn bit_string(bytes: &[u8]) -> Vec<u8> {
    tlv(BIT_STRING, &[&[0u8][..], bytes].concat())
}

/// A RelativeDistinguishedName with one UTF8String attribute.
fn rdn(oid: &[u8], value: &str) -> Vec<u8> {
    let atv = tlv(
        SEQUENCE,
        &[tlv(OID, oid), tlv(UTF8_STRING, value.as_bytes())].concat(),
    );
    tlv(SET, &atv)
}

#[cfg(test)]
mod tests;
