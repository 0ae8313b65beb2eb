//! The request is read back field by field, its signature checked with the public key it
//! carries, and — where `openssl` is installed — parsed and verified by OpenSSL as well.

use std::net::IpAddr;

use ring::signature::{ECDSA_P256_SHA256_ASN1, UnparsedPublicKey};

use super::*;

/// One DER element: tag, content and its whole encoding. The test walks the request's bytes
/// itself, so that what it checks is the encoding `build` wrote, not a library's reading of it.
struct Tlv<'a> {
    tag: u8,
    content: &'a [u8],
    /// Tag, length and content as they stand in the input.
    encoded: &'a [u8],
}

/// Reads one element from the front of `buf`; returns it and the rest.
fn next(buf: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
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
    let encoded = &buf[..buf.len() - rest.len()];
    Some((
        Tlv {
            tag,
            content,
            encoded,
        },
        rest,
    ))
}

/// All elements of a constructed value's content.
fn children(mut buf: &[u8]) -> Option<Vec<Tlv<'_>>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let (t, rest) = next(buf)?;
        out.push(t);
        buf = rest;
    }
    Some(out)
}

fn sans() -> Sans {
    Sans {
        dns: vec!["mac-1".into()],
        ips: vec![IpAddr::from([10, 0, 0, 5]), "fd00::5".parse().unwrap()],
    }
}

fn one(buf: &[u8]) -> Tlv<'_> {
    let (t, rest) = next(buf).unwrap();
    assert!(rest.is_empty(), "trailing bytes after tag {:#x}", t.tag);
    t
}

/// (OID, UTF8 value) of each RDN of a Name, in order.
fn rdns(name: &Tlv<'_>) -> Vec<(Vec<u8>, String)> {
    children(name.content)
        .unwrap()
        .iter()
        .map(|set| {
            assert_eq!(set.tag, SET);
            let atv = one(set.content);
            let parts = children(atv.content).unwrap();
            assert_eq!(parts[1].tag, UTF8_STRING);
            (
                parts[0].content.to_vec(),
                String::from_utf8(parts[1].content.to_vec()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_request_carries_the_node_subject_its_addresses_and_a_valid_signature() {
    let key = ServingKey::generate().unwrap();
    let der = build(&key, "mac-1", &sans()).unwrap();

    let csr = one(&der);
    let [info, alg, sig] = &children(csr.content).unwrap()[..] else {
        panic!("a request has three parts")
    };
    let fields = children(info.content).unwrap();
    assert_eq!((fields[0].tag, fields[0].content), (INTEGER, &[0u8][..]));
    assert_eq!(
        rdns(&fields[1]),
        [
            (OID_O.to_vec(), "system:nodes".to_owned()),
            (OID_CN.to_vec(), "system:node:mac-1".to_owned()),
        ]
    );

    // subjectPublicKeyInfo: id-ecPublicKey on P-256, the key's own point.
    let spki = children(fields[2].content).unwrap();
    let algs = children(spki[0].content).unwrap();
    assert_eq!(
        (algs[0].content, algs[1].content),
        (OID_EC_PUBLIC_KEY, OID_P256)
    );
    assert_eq!(&spki[1].content[1..], key.public_key());

    // One extensionRequest attribute with one subjectAltName extension.
    assert_eq!(fields[3].tag, ATTRIBUTES);
    let attr = children(one(fields[3].content).content).unwrap();
    assert_eq!(attr[0].content, OID_EXTENSION_REQUEST);
    let exts = one(one(attr[1].content).content);
    let ext = children(exts.content).unwrap();
    assert_eq!(ext[0].content, OID_SAN);
    let names = one(ext[1].content);
    let got: Vec<(u8, Vec<u8>)> = children(names.content)
        .unwrap()
        .iter()
        .map(|n| (n.tag, n.content.to_vec()))
        .collect();
    let mut v6 = vec![0xfd, 0];
    v6.extend([0; 13]);
    v6.push(5);
    assert_eq!(
        got,
        [
            (SAN_DNS, b"mac-1".to_vec()),
            (SAN_IP, vec![10, 0, 0, 5]),
            (SAN_IP, v6),
        ]
    );

    // ecdsa-with-SHA256 over the DER of the request info, by the key in the request.
    assert_eq!(one(alg.content).content, OID_ECDSA_SHA256);
    assert_eq!(sig.content[0], 0, "no unused bits");
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, key.public_key())
        .verify(info.encoded, &sig.content[1..])
        .expect("the signature verifies");
}

#[test]
fn a_stored_key_is_the_same_key_and_names_the_same_request() {
    let key = ServingKey::generate().unwrap();
    let again = ServingKey::from_pkcs8(key.pkcs8()).unwrap();
    assert_eq!(again.public_key(), key.public_key());
    assert_eq!(again.fingerprint(), key.fingerprint());
    assert_eq!(key.fingerprint().len(), 8);
    assert_ne!(
        ServingKey::generate().unwrap().fingerprint(),
        key.fingerprint()
    );
    assert!(matches!(
        ServingKey::from_pkcs8(b"junk"),
        Err(KeyError::Parse)
    ));
}

#[test]
fn pem_wraps_base64_at_64_columns() {
    let p = pem("CERTIFICATE REQUEST", &[0u8; 100]);
    let lines: Vec<&str> = p.lines().collect();
    assert_eq!(lines[0], "-----BEGIN CERTIFICATE REQUEST-----");
    // 100 bytes are 136 base64 characters: 64 + 64 + 8.
    assert_eq!(
        lines[1..4].iter().map(|l| l.len()).collect::<Vec<_>>(),
        [64, 64, 8]
    );
    assert_eq!(lines[4], "-----END CERTIFICATE REQUEST-----");
    assert!(p.ends_with('\n'));
}

#[test]
fn long_lengths_are_encoded_in_the_fewest_bytes() {
    assert_eq!(&tlv(0x04, &[0; 0x7f])[..2], [0x04, 0x7f]);
    assert_eq!(&tlv(0x04, &[0; 0x80])[..3], [0x04, 0x81, 0x80]);
    assert_eq!(&tlv(0x04, &[0; 0x1234])[..4], [0x04, 0x82, 0x12, 0x34]);
}

/// OpenSSL is an independent judge of the encoding; skipped (with a note) where absent.
#[tokio::test]
async fn openssl_parses_and_verifies_the_request() {
    let Ok(which) = tokio::process::Command::new("openssl")
        .arg("version")
        .output()
        .await
    else {
        eprintln!("openssl not installed: skipped");
        return;
    };
    assert!(which.status.success());
    let key = ServingKey::generate().unwrap();
    let der = build(&key, "mac-1", &sans()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("req.pem");
    std::fs::write(&path, pem("CERTIFICATE REQUEST", &der)).unwrap();
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        tokio::process::Command::new("openssl")
            .args(["req", "-noout", "-text", "-verify", "-in"])
            .arg(&path)
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("verify OK") || text.contains("Certificate request self-signature verify OK"),
        "{text}"
    );
    assert!(
        text.contains("O = system:nodes, CN = system:node:mac-1")
            || text.contains("O=system:nodes, CN=system:node:mac-1"),
        "{text}"
    );
    assert!(
        text.contains("DNS:mac-1, IP Address:10.0.0.5, IP Address:FD00:0:0:0:0:0:0:5"),
        "{text}"
    );
    assert!(
        text.contains("prime256v1") || text.contains("P-256"),
        "{text}"
    );
}

#[test]
fn a_request_without_names_carries_no_extension_request() {
    let key = ServingKey::generate().unwrap();
    let der = build(&key, "mac-1", &Sans::default()).unwrap();
    let csr = one(&der);
    let [info, _, sig] = &children(csr.content).unwrap()[..] else {
        panic!("a request has three parts")
    };
    let fields = children(info.content).unwrap();
    assert_eq!(
        rdns(&fields[1]),
        [
            (OID_O.to_vec(), "system:nodes".to_owned()),
            (OID_CN.to_vec(), "system:node:mac-1".to_owned()),
        ]
    );
    // The attributes are present (PKCS#10 requires them) and empty.
    assert_eq!((fields[3].tag, fields[3].content), (ATTRIBUTES, &[][..]));
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, key.public_key())
        .verify(info.encoded, &sig.content[1..])
        .expect("the signature verifies");
}
