//! Reading issued certificates (against the test PKI in `../testdata`), the reuse decision and
//! the renewal deadline.

use std::{
    net::IpAddr,
    path::Path,
    time::{Duration, SystemTime},
};

use rustls::pki_types::{CertificateDer, pem::PemObject};

use super::*;

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn testdata_leaf(name: &str) -> Leaf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/kubelet_api/testdata")
        .join(name);
    let der = CertificateDer::pem_file_iter(path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    leaf(&der).unwrap()
}

#[test]
fn validity_names_and_subject_are_read_from_a_real_certificate() {
    // notBefore is a UTCTime (2026), notAfter a GeneralizedTime (2126).
    let l = testdata_leaf("serving.crt");
    assert_eq!(l.not_before, at(1_795_489_722));
    assert_eq!(l.not_after, at(4_949_089_722));
    assert_eq!(l.common_name, "serving-a");
    assert_eq!(l.sans.dns, ["localhost"]);
    assert_eq!(l.sans.ips, [IpAddr::from([127, 0, 0, 1])]);
}

#[test]
fn garbage_is_not_a_leaf() {
    assert_eq!(leaf(b"not a certificate"), None);
    assert_eq!(leaf(&[]), None);
}

#[test]
fn expired_and_not_yet_valid_certificates_are_read_and_not_fit() {
    // Reading does not verify: `fit` decides whether a stored certificate is served.
    let now = SystemTime::now();
    for (name, not_before, not_after) in [
        ("dated-expired.crt", 1_577_836_800, 1_609_459_200),
        ("dated-future.crt", 4_102_444_800, 4_133_980_800),
    ] {
        let l = testdata_leaf(name);
        assert_eq!((l.not_before, l.not_after), (at(not_before), at(not_after)));
        assert_eq!(
            fit(&l, "x", &Sans::default(), now),
            Err(Unfit::Expired),
            "{name}"
        );
    }
}

fn sans(dns: &[&str], ips: &[[u8; 4]]) -> Sans {
    Sans {
        dns: dns.iter().map(|d| (*d).to_owned()).collect(),
        ips: ips.iter().map(|i| IpAddr::from(*i)).collect(),
    }
}

#[test]
fn a_stored_certificate_is_reused_only_while_valid_for_this_node_and_its_addresses() {
    let cert = Leaf {
        not_before: at(1000),
        not_after: at(2000),
        common_name: "system:node:mac-1".into(),
        sans: sans(&["mac-1"], &[[10, 0, 0, 5], [127, 0, 0, 1]]),
    };
    let want = sans(&["mac-1"], &[[10, 0, 0, 5]]);
    let cases: &[(&str, SystemTime, &Sans, Result<(), Unfit>)] = &[
        ("mac-1", at(1500), &want, Ok(())),
        ("mac-1", at(999), &want, Err(Unfit::Expired)),
        ("mac-1", at(2000), &want, Err(Unfit::Expired)),
        ("mac-2", at(1500), &want, Err(Unfit::OtherNode)),
        (
            "mac-1",
            at(1500),
            &sans(&["mac-1"], &[[10, 0, 0, 6]]),
            Err(Unfit::MissingName),
        ),
        (
            "mac-1",
            at(1500),
            &sans(&["mac-1.local"], &[[10, 0, 0, 5]]),
            Err(Unfit::MissingName),
        ),
    ];
    for (node, now, want, expect) in cases {
        assert_eq!(fit(&cert, node, want, *now), *expect, "{node} at {now:?}");
    }
}

#[test]
fn renewal_falls_between_70_and_90_percent_of_the_lifetime() {
    let day = 86_400;
    let (nb, na) = (at(10 * day), at(110 * day));
    let cases: &[(f64, u64)] = &[
        (0.0, 80 * day),
        (0.5, 90 * day),
        (0.999_999, 100 * day),
        (1.0, 100 * day),
        (-3.0, 80 * day),
        (7.0, 100 * day),
    ];
    for (draw, secs) in cases {
        let d = rotation_deadline(nb, na, *draw);
        let got = d.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
        assert!(got.abs_diff(*secs) <= 10, "draw {draw}: {got} != {secs}");
    }
    assert_eq!(
        rotation_deadline(na, nb, 0.5),
        na,
        "inverted validity renews at once"
    );
}
