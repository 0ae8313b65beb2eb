//! `$TART_HOME` layout (docs/reference/tart-cli.md §1.1), `config.json` (schema §1.1,
//! pretty-printed the Apple way), sparse disk files and their sizes. Owns paths and file formats;
//! leaves locks to `locks.rs`.

use std::fs::{self, File, FileTimes, OpenOptions};
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};

use crate::error::Failure;

/// Bytes per GB as Tart counts disk sizes (10^9).
pub(crate) const GB: u64 = 1_000_000_000;
/// Bytes per MiB (memory sizes).
pub(crate) const MIB: u64 = 1024 * 1024;

/// The storage root and its well-known paths.
#[derive(Debug, Clone)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    /// `$TART_HOME` (default `~/.tart`), creating missing components
    /// (docs/reference/tart-cli.md §1.1).
    pub fn from_env() -> Result<Home, Failure> {
        let root = match std::env::var_os("TART_HOME") {
            Some(h) if !h.is_empty() => PathBuf::from(h),
            _ => {
                let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
                PathBuf::from(home).join(".tart")
            }
        };
        if let Err(e) = fs::create_dir_all(&root) {
            return Err(Failure::runtime(
                format!(
                    "TART_HOME is invalid: {} does not exist, yet we can't create it: {e}",
                    root.display()
                ),
                1,
            ));
        }
        Ok(Home { root })
    }

    pub fn vms(&self) -> PathBuf {
        self.root.join("vms")
    }
    pub fn vm_dir(&self, name: &str) -> PathBuf {
        self.vms().join(name)
    }
    pub fn config_path(&self, name: &str) -> PathBuf {
        self.vm_dir(name).join("config.json")
    }
    pub fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    pub fn oci(&self) -> PathBuf {
        self.root.join("cache").join("OCIs")
    }
    pub fn fake_dir(&self) -> PathBuf {
        self.root.join("fake-tart")
    }
    /// Whether a local VM exists (has a `config.json`, docs/reference/tart-cli.md §2.9).
    pub fn vm_exists(&self, name: &str) -> bool {
        !name.is_empty() && !name.contains('/') && self.config_path(name).is_file()
    }
    /// Names of local VMs, sorted.
    pub fn local_vms(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.vms())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| self.vm_exists(n))
            .collect();
        names.sort();
        names
    }
}

// === config.json ===

/// `display` of config.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Display {
    pub width: u32,
    pub height: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// `config.json` of a VM (docs/reference/tart-cli.md §1.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VmConfig {
    pub version: u32,
    pub os: String,
    pub arch: String,
    pub cpu_count_min: u32,
    pub cpu_count: u32,
    pub memory_size_min: u64,
    pub memory_size: u64,
    pub mac_address: String,
    pub display: Display,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_refit: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_model: Option<String>,
}

impl VmConfig {
    /// A new config as an image of the given OS would carry.
    pub(crate) fn new(os: &str, cpu: u32, memory_mb: u64, mac: String) -> VmConfig {
        let darwin = os == "darwin";
        VmConfig {
            version: 1,
            os: os.to_string(),
            arch: "arm64".into(),
            cpu_count_min: if darwin { 4 } else { 1 },
            cpu_count: cpu,
            memory_size_min: if darwin { 4096 * MIB } else { 512 * MIB },
            memory_size: memory_mb * MIB,
            mac_address: mac,
            display: Display {
                width: 1024,
                height: 768,
                unit: None,
            },
            display_refit: None,
            disk_format: Some("raw".into()),
            ecid: darwin.then(|| "ZmFrZS1lY2lk".into()),
            hardware_model: darwin.then(|| "ZmFrZS1odw==".into()),
        }
    }

    pub(crate) fn read(path: &Path) -> Result<VmConfig, Failure> {
        let bytes = fs::read(path)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Failure::other(format!("failed to parse {}: {e}", path.display())))
    }

    /// Writes in place (truncate + write, same inode) as `Data.write(to:)` does, so a running
    /// VM's fcntl lock on the file (held by another process) survives a `set`.
    pub(crate) fn write(&self, path: &Path) -> io::Result<()> {
        let text = apple_pretty(self)?;
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        f.write_all(text.as_bytes())
    }
}

/// Pretty JSON the way Apple's `JSONEncoder` prints it: two-space indent and `"key" : value`.
pub(crate) fn apple_pretty<T: Serialize>(value: &T) -> io::Result<String> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, AppleFormatter::default());
    value.serialize(&mut ser).map_err(io::Error::other)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[derive(Default)]
struct AppleFormatter(serde_json::ser::PrettyFormatter<'static>);

impl serde_json::ser::Formatter for AppleFormatter {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, f: bool) -> io::Result<()> {
        self.0.begin_array_value(w, f)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, f: bool) -> io::Result<()> {
        self.0.begin_object_key(w, f)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b" : ")
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

// === files and sizes ===

/// Creates a sparse file of `len` bytes.
pub(crate) fn create_sparse(path: &Path, len: u64) -> io::Result<()> {
    let f = File::create(path)?;
    f.set_len(len)
}

/// Copies `src` to `dst` keeping holes (there is no APFS clonefile on Linux,
/// docs/reference/tart-cli.md §8), so a 50 GB mostly-empty disk copies in milliseconds.
pub(crate) fn sparse_copy(src: &Path, dst: &Path) -> io::Result<()> {
    use nix::unistd::{Whence, lseek};
    let from = File::open(src)?;
    let to = File::create(dst)?;
    let len = from.metadata()?.len();
    to.set_len(len)?;
    let mut pos: i64 = 0;
    let mut buf = vec![0u8; 1 << 20];
    while (pos as u64) < len {
        let start = match lseek(&from, pos, Whence::SeekData) {
            Ok(s) => s,
            Err(nix::errno::Errno::ENXIO) => break,
            Err(e) => return Err(e.into()),
        };
        let end = lseek(&from, start, Whence::SeekHole)?;
        let mut off = start;
        while off < end {
            let want = ((end - off) as usize).min(buf.len());
            let n = from.read_at(&mut buf[..want], off as u64)?;
            if n == 0 {
                break;
            }
            to.write_all_at(&buf[..n], off as u64)?;
            off += n as i64;
        }
        pos = end;
    }
    Ok(())
}

/// (logical bytes, allocated bytes) of the regular files directly in `dir`.
pub(crate) fn dir_sizes(dir: &Path) -> (u64, u64) {
    let mut logical = 0;
    let mut allocated = 0;
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        if let Ok(md) = entry.metadata()
            && md.is_file()
        {
            logical += md.len();
            allocated += md.blocks() * 512;
        }
    }
    (logical, allocated)
}

/// Logical size of the VM's disk (`disk.img`), bytes.
pub(crate) fn disk_len(dir: &Path) -> u64 {
    fs::metadata(dir.join("disk.img"))
        .map(|m| m.len())
        .unwrap_or(0)
}

/// Updates a directory's access time, as Tart's `open()` does with `utimes`
/// (docs/reference/tart-cli.md §2.4).
pub(crate) fn touch_accessed(dir: &Path) -> Result<(), Failure> {
    let f = File::open(dir)?;
    f.set_times(FileTimes::new().set_accessed(SystemTime::now()))
        .map_err(|e| Failure::runtime(format!("utimes(2) failed: {e}"), 1))
}

/// Access time of a path (following symlinks).
pub(crate) fn accessed(path: &Path) -> SystemTime {
    fs::metadata(path)
        .and_then(|m| m.accessed())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

// === MAC and IP ===

/// Lowercase hex of md5(`s`).
pub(crate) fn md5_hex(s: &str) -> String {
    Md5::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A stable, locally administered MAC derived from `seed`.
pub(crate) fn stable_mac(seed: &str) -> String {
    let d = Md5::digest(seed.as_bytes());
    format_mac([(d[0] & 0xfe) | 0x02, d[1], d[2], d[3], d[4], d[5]])
}

/// A fresh random locally administered MAC.
pub(crate) fn random_mac() -> String {
    let mut b: [u8; 6] = rand::random();
    b[0] = (b[0] & 0xfe) | 0x02;
    format_mac(b)
}

fn format_mac(b: [u8; 6]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The IPv4 the fake DHCP server gives `mac`: stable, in 192.168.64.2-254
/// (docs/reference/tart-cli.md §3.3).
pub(crate) fn ip_for_mac(mac: &str) -> String {
    let d = Md5::digest(mac.to_ascii_lowercase().as_bytes());
    let host = 2 + (u16::from_be_bytes([d[0], d[1]]) % 253);
    format!("192.168.64.{host}")
}

/// The address a bridged guest takes from its LAN's DHCP server: stable for `mac`, in
/// 192.168.1.2-254, a typical home or office LAN outside the NAT's 192.168.64.0/24.
pub(crate) fn lan_ip_for_mac(mac: &str) -> String {
    let d = Md5::digest(mac.to_ascii_lowercase().as_bytes());
    let host = 2 + (u16::from_be_bytes([d[2], d[3]]) % 253);
    format!("192.168.1.{host}")
}

/// The VM's address on the host's loopback (knob `loopback_ips`): stable for `mac` in this
/// `TART_HOME`, in 127.64.0.1-127.64.255.254. Linux routes all of 127.0.0.0/8 to `lo`, so
/// every VM can listen on the same port at its own address. The home is part of the hash so
/// that VMs of different homes (parallel tests cloning one image) get different addresses.
pub(crate) fn loopback_ip_for_mac(home: &Path, mac: &str) -> Ipv4Addr {
    let key = format!("{}\n{}", home.display(), mac.to_ascii_lowercase());
    let d = Md5::digest(key.as_bytes());
    Ipv4Addr::new(127, 64, d[2], 1 + d[3] % 254)
}

#[cfg(test)]
mod tests;
