//! The certificate directory (`--cert-dir`, 0700): the issued certificate and its key together
//! in `kubelet-server-current.pem` (kubelet's name; one file, so a restart never pairs a
//! certificate with the wrong key), and the key of a request still waiting in
//! `kubelet-server-pending.key`, so an agent restarted while its request waits asks again with
//! the same key and finds the same request. Both 0600, written by rename.

use std::{
    io::{self, Write as _},
    os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _},
    path::{Path, PathBuf},
};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

use super::request::{ServingKey, pem};

/// The issued pair.
pub(crate) const CURRENT: &str = "kubelet-server-current.pem";
/// The key of the request waiting for its certificate.
pub(crate) const PENDING_KEY: &str = "kubelet-server-pending.key";

/// A certificate directory.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    dir: PathBuf,
}

/// The certificate chain (leaf first) and its key.
pub(crate) struct Pair {
    /// DER certificates, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    pub key: ServingKey,
}

impl Store {
    /// The directory `dir` (created on first write).
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The stored pair, `None` when absent or unreadable (then a new one is requested).
    pub(crate) fn current(&self) -> Option<Pair> {
        let pem = std::fs::read(self.dir.join(CURRENT)).ok()?;
        let chain: Vec<_> = CertificateDer::pem_slice_iter(&pem)
            .filter_map(Result::ok)
            .collect();
        let key = key_of(&pem)?;
        (!chain.is_empty()).then_some(Pair { chain, key })
    }

    /// Stores `chain` with `key` as the current pair.
    ///
    /// # Errors
    /// When the directory or file cannot be written.
    pub(crate) fn save_current(
        &self,
        chain: &[CertificateDer<'_>],
        key: &ServingKey,
    ) -> io::Result<()> {
        let mut text: String = chain.iter().map(|c| pem("CERTIFICATE", c)).collect();
        text.push_str(&pem("PRIVATE KEY", key.pkcs8()));
        self.write(CURRENT, text.as_bytes())
    }

    /// The key of the waiting request, if any.
    pub(crate) fn pending_key(&self) -> Option<ServingKey> {
        key_of(&std::fs::read(self.dir.join(PENDING_KEY)).ok()?)
    }

    /// Keeps `key` as the waiting request's key.
    ///
    /// # Errors
    /// When the directory or file cannot be written.
    pub(crate) fn save_pending_key(&self, key: &ServingKey) -> io::Result<()> {
        self.write(PENDING_KEY, pem("PRIVATE KEY", key.pkcs8()).as_bytes())
    }

    /// Forgets the waiting request's key (issued, or refused).
    pub(crate) fn drop_pending_key(&self) {
        let _ = std::fs::remove_file(self.dir.join(PENDING_KEY));
    }

    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))?;
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, self.dir.join(name))
    }
}

fn key_of(pem: &[u8]) -> Option<ServingKey> {
    match PrivateKeyDer::from_pem_slice(pem).ok()? {
        PrivateKeyDer::Pkcs8(k) => ServingKey::from_pkcs8(k.secret_pkcs8_der()).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
