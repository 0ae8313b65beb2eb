//! PURE: reading DER certificates through RustCrypto's `x509-cert` (docs/dependencies.md).
//! [`subject`] is the user a verified client certificate names, as kubelet's x509
//! authenticator reads it: user = the subject's CommonName, groups = its Organization values,
//! in order. `csr::issued` reads an issued serving certificate's validity and names from the
//! same parse ([`certificate`]).
//!
//! rustls has already verified a client certificate's chain against the client CA, its
//! validity and its `clientAuth` usage when [`subject`] runs.

use x509_cert::{
    Certificate,
    der::{Decode, oid::db::rfc4519},
    name::Name,
};

/// The subject's CommonName and Organization values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Subject {
    /// CN (empty when absent; the last one when several).
    pub common_name: String,
    /// O values, in certificate order.
    pub organizations: Vec<String>,
}

/// DER certificate `der`, parsed; `None` when it is not one (trailing bytes included).
pub(crate) fn certificate(der: &[u8]) -> Option<Certificate> {
    Certificate::from_der(der).ok()
}

/// The subject of a DER certificate; `None` when it is not one.
pub(crate) fn subject(der: &[u8]) -> Option<Subject> {
    Some(names(certificate(der)?.tbs_certificate().subject()))
}

/// The CN and O values of `name`. A value's bytes are read as UTF-8 whatever its string type
/// (UTF8String, PrintableString, …), invalid sequences replaced, as Go's reader keeps them.
pub(crate) fn names(name: &Name) -> Subject {
    let mut out = Subject::default();
    for atv in name.iter() {
        let text = || String::from_utf8_lossy(atv.value.value()).into_owned();
        if atv.oid == rfc4519::CN {
            out.common_name = text();
        } else if atv.oid == rfc4519::O {
            out.organizations.push(text());
        }
    }
    out
}

#[cfg(test)]
mod tests;
