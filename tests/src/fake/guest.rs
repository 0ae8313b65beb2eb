//! Builders for the knobs that make a fake VM a guest the host can probe: the kind of image,
//! loopback addresses, the guest's TCP endpoints, real `exec` and a slow guest agent.

use super::{EndpointState, Knobs, VmKnob};

impl Knobs {
    /// `ip` prints each VM's `127.64.x.y` loopback address, where its endpoints listen.
    pub fn with_loopback_ips(mut self) -> Knobs {
        self.loopback_ips = Some(true);
        self
    }
}

impl VmKnob {
    /// Once booted, the guest serves `port` on its loopback address in `state` (a later entry
    /// for the same port replaces the earlier one).
    pub fn with_endpoint(mut self, port: u16, state: EndpointState) -> VmKnob {
        self.endpoints
            .get_or_insert_with(Default::default)
            .insert(port, state);
        self
    }
    /// `exec` spawns the command as a real process in the guest root instead of the builtins.
    pub fn with_real_exec(mut self) -> VmKnob {
        self.real_exec = Some(true);
        self
    }
    /// The guest agent answers `exec` `ms` (scaled) after the call connects.
    pub fn with_exec_delay_ms(mut self, ms: u64) -> VmKnob {
        self.exec_delay_ms = Some(ms);
        self
    }
}

/// The three kinds of macOS image a Pod's guest can be (docs/fake-tart.md, "Kinds of image").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestImage {
    /// The tart-kubelet launcher is baked in (and the Tart Guest Agent answers `exec`).
    Baked,
    /// Only the Tart Guest Agent (Cirrus Labs' base, xcode and runner images): `exec` runs
    /// real processes as `admin`, who has passwordless `sudo`.
    AgentOnly,
    /// Neither (Cirrus Labs' vanilla images): `exec` fails as Tart does when no agent answers.
    Vanilla,
}

impl VmKnob {
    /// The guest is an image of kind `kind`.
    pub fn guest_image(mut self, kind: GuestImage) -> VmKnob {
        match kind {
            GuestImage::Baked => self.guest_launcher = Some(true),
            GuestImage::AgentOnly => self.real_exec = Some(true),
            GuestImage::Vanilla => self.exec_unreachable = Some(true),
        }
        self
    }
    /// The image's `sudo` asks the exec user for a password (`sudo -n` fails).
    pub fn with_sudo_password(mut self) -> VmKnob {
        self.sudo_password = Some(true);
        self
    }
}
