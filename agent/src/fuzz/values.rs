//! Fuzz targets for values that come from Pod specs and client certificates: image references
//! ([`crate::images::reference`]), resource quantities ([`crate::quantity`]) and the subject
//! of a client certificate ([`crate::kubelet_api::x509`]).

use rustls::pki_types::{CertificateDer, pem::PemObject};

use crate::{images::reference::ImageRef, kubelet_api::x509, quantity};
use tart::fuzz::{COPY_BOUND, Target, strings};

pub(super) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "image_reference",
            run: image_reference,
            seeds: image_seeds,
            tokens: &[
                "/",
                ":",
                "@sha256:",
                "localhost",
                ".io",
                "..",
                "$(",
                ";",
                "\n",
                " ",
            ],
            max_alloc: COPY_BOUND,
        },
        Target {
            name: "quantity",
            run: quantity,
            seeds: quantity_seeds,
            tokens: &[
                "Ki", "Mi", "Gi", "Ei", "m", "n", "u", "k", "E", "e", "e-", ".", "+", "-",
            ],
            max_alloc: COPY_BOUND,
        },
        Target {
            name: "x509_subject",
            run: x509_subject,
            seeds: x509_seeds,
            tokens: &[
                "\u{30}\u{82}",
                "\u{31}",
                "\u{6}\u{3}\u{55}\u{4}\u{3}",
                "\u{84}\u{ff}",
            ],
            max_alloc: COPY_BOUND,
        },
    ]
}

/// An accepted reference is the text as given, made only of characters that are safe in argv
/// and paths, and its cache name reads back as the same image (when the `:latest` it may add
/// keeps it within the 512-byte limit).
fn image_reference(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(r) = ImageRef::parse(&text) else {
        return;
    };
    assert_eq!(r.as_str(), text);
    assert!(
        text.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-:/@".contains(&b)),
        "{text:?}"
    );
    assert!(
        !r.repository.split('/').any(|c| c == "." || c == ".."),
        "{text:?}"
    );
    if r.cache_name().len() > 512 {
        return;
    }
    let again = ImageRef::parse(&r.cache_name()).expect("the cache name is a reference");
    assert_eq!((&again.host, &again.repository), (&r.host, &r.repository));
    assert_eq!(again.cache_name(), r.cache_name());
}

/// A quantity in cores is never less than in whole units (both round up), and one that is
/// read at all is read at both scales.
fn quantity(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let units = quantity::parse_scaled(&text, 1);
    if let Some(milli) = quantity::parse_scaled(&text, 1000) {
        let units = units.expect("read in millis but not in units");
        assert!(milli >= units, "{text:?}: {milli} < {units}");
    }
    if let Some(b) = quantity::parse_bytes(&text) {
        assert_eq!(Some(u128::from(b)), units);
    }
}

/// A client certificate's DER: never a panic, whatever the lengths and nesting say.
fn x509_subject(data: &[u8]) {
    if let Some(s) = x509::subject(data) {
        assert!(s.common_name.len() <= data.len() * 3, "{s:?}");
    }
}

fn image_seeds() -> Vec<Vec<u8>> {
    let digest = format!("registry.example.com/a/b@sha256:{}", "a".repeat(64));
    strings(&[
        "ghcr.io/cirruslabs/macos-sequoia-xcode:16.1",
        "localhost:5000/ns/img",
        digest.as_str(),
        "ghcr.io/a/$(touch x)",
        "host:99999999/a",
        "ghcr.io/a:\"q\"",
        "ubuntu:22.04",
    ])
}

fn quantity_seeds() -> Vec<Vec<u8>> {
    strings(&[
        "2",
        "500m",
        "1.5",
        "0.0001",
        "8Gi",
        "1.5Gi",
        "4G",
        "128974848",
        "129e6",
        "+1k",
        "1e99999",
        "9999999999999999999999Ei",
        "20Ei",
        "1E-3",
    ])
}

/// The DER of the PEM certificates the kubelet API's tests use.
fn x509_seeds() -> Vec<Vec<u8>> {
    let der = |pem: &[u8]| {
        CertificateDer::from_pem_slice(pem).map_or_else(|_| Vec::new(), |c| c.to_vec())
    };
    vec![
        der(include_bytes!("../kubelet_api/testdata/client.crt")),
        der(include_bytes!("../kubelet_api/testdata/stranger.crt")),
        der(include_bytes!("../kubelet_api/testdata/serving.crt")),
    ]
}
