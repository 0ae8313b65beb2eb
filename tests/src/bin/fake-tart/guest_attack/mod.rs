//! A hostile guest (knob `guest_attack`, under `guest_launcher`): once the launcher has
//! ended, and before the guest powers off, it replaces files of its status share with a
//! symbolic link to a host path or a FIFO, or grows one by gigabytes at once — what code in
//! a real guest can do to the share, which is a host directory. In a real VM a link's target
//! is resolved by whoever follows it: on the host, the agent.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::symlink;
use std::path::Path;

use nix::sys::stat::Mode;

use crate::knobs::{AttackKind, GuestAttack};

/// The line a grown file ends with.
pub(crate) const AFTER_FLOOD: &str = "after the flood";

/// Play `attack` on the files of `status`.
pub(crate) fn play(status: &Path, attack: &GuestAttack) -> io::Result<()> {
    for name in &attack.files {
        let path = status.join(name);
        match &attack.how {
            AttackKind::Symlink(target) => {
                remove(&path)?;
                symlink(target, &path)?;
            }
            AttackKind::Fifo => {
                remove(&path)?;
                nix::unistd::mkfifo(&path, Mode::S_IRUSR | Mode::S_IWUSR)?;
            }
            AttackKind::Grow(bytes) => {
                let mut f = fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)?;
                let len = f.metadata()?.len();
                f.set_len(len.saturating_add(*bytes))?;
                // The hole is a line of its own; the flood's end is the next one.
                write!(f, "\n{AFTER_FLOOD}\n")?;
            }
        }
    }
    Ok(())
}

fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
