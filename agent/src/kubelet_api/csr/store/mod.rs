//! The certificate directory (`--cert-dir`, 0700): the issued certificate and its key together
//! in `<prefix>-current.pem` (kubelet's names: `kubelet-server-current.pem` for the serving
//! certificate, `kubelet-client-current.pem` for the client one; one file, so a restart never
//! pairs a certificate with the wrong key), and the key of a request still waiting in
//! `<prefix>-pending.key`, so an agent restarted while its request waits asks again with the
//! same key and finds the same request. Both 0600, written by rename.

use std::{
    io::{self, Write as _},
    os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _},
    path::{Path, PathBuf},
};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

use super::request::{KeyError, ServingKey, pem};

/// The file prefix of the serving certificate's pair.
pub(crate) const SERVING: &str = "kubelet-server";
/// The file prefix of the client certificate's pair.
pub(crate) const CLIENT: &str = "kubelet-client";

/// Why no key for a new request could be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NewKeyError {
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The key could not be kept in the certificate directory.
    #[error("cannot write to the certificate directory")]
    Store(#[source] io::Error),
}

/// One certificate's files in a certificate directory.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    dir: PathBuf,
    prefix: &'static str,
}

/// The certificate chain (leaf first) and its key.
pub(crate) struct Pair {
    /// DER certificates, leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    pub key: ServingKey,
}

impl Store {
    /// The serving certificate's files in `dir` (created on first write).
    pub(crate) fn new(dir: impl Into<PathBuf>) -> Self {
        Self::with_prefix(dir, SERVING)
    }

    /// The files named `<prefix>-current.pem` and `<prefix>-pending.key` in `dir`.
    pub(crate) fn with_prefix(dir: impl Into<PathBuf>, prefix: &'static str) -> Self {
        Self {
            dir: dir.into(),
            prefix,
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding the issued pair (certificate chain, then key).
    pub(crate) fn current_path(&self) -> PathBuf {
        self.dir.join(format!("{}-current.pem", self.prefix))
    }

    /// The file holding the waiting request's key.
    pub(crate) fn pending_path(&self) -> PathBuf {
        self.dir.join(format!("{}-pending.key", self.prefix))
    }

    /// The stored pair, `None` when absent or unreadable (then a new one is requested).
    pub(crate) fn current(&self) -> Option<Pair> {
        let pem = std::fs::read(self.current_path()).ok()?;
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
        self.write(&self.current_path(), text.as_bytes())
    }

    /// The key of the waiting request, if any.
    pub(crate) fn pending_key(&self) -> Option<ServingKey> {
        key_of(&std::fs::read(self.pending_path()).ok()?)
    }

    /// The waiting request's key, else a new one kept as the waiting request's.
    ///
    /// # Errors
    /// [`NewKeyError`] when no key can be made or it cannot be kept.
    pub(crate) fn pending_or_new_key(&self) -> Result<ServingKey, NewKeyError> {
        if let Some(k) = self.pending_key() {
            return Ok(k);
        }
        let k = ServingKey::generate()?;
        self.save_pending_key(&k).map_err(NewKeyError::Store)?;
        Ok(k)
    }

    /// Keeps `key` as the waiting request's key.
    ///
    /// # Errors
    /// When the directory or file cannot be written.
    pub(crate) fn save_pending_key(&self, key: &ServingKey) -> io::Result<()> {
        self.write(
            &self.pending_path(),
            pem("PRIVATE KEY", key.pkcs8()).as_bytes(),
        )
    }

    /// Forgets the waiting request's key (issued, or refused).
    pub(crate) fn drop_pending_key(&self) {
        let _ = std::fs::remove_file(self.pending_path());
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))?;
        write_private(path, bytes)
    }
}

/// Writes `bytes` to `path` with mode 0600 by rename: a reader sees the old file or the new
/// one, never a part.
///
/// # Errors
/// When the temporary file cannot be made, written or renamed.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn key_of(pem: &[u8]) -> Option<ServingKey> {
    match PrivateKeyDer::from_pem_slice(pem).ok()? {
        PrivateKeyDer::Pkcs8(k) => ServingKey::from_pkcs8(k.secret_pkcs8_der()).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
