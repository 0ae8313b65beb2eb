//! Builders for the fake host's networking: its `softnet` program and the interfaces
//! `run --net-bridged` may name (docs/fake-tart.md, "Networks").

use super::{BridgeInterface, Knobs, SoftnetSetup};

impl Knobs {
    /// The fake host's `softnet` is set up as `setup`.
    pub fn with_softnet(mut self, setup: SoftnetSetup) -> Knobs {
        self.softnet = Some(setup);
        self
    }
    /// The host's bridgeable interfaces, in order: `(identifier, display name)`.
    pub fn with_bridge_interfaces(mut self, interfaces: &[(&str, Option<&str>)]) -> Knobs {
        self.bridge_interfaces = Some(
            interfaces
                .iter()
                .map(|(id, name)| BridgeInterface {
                    identifier: (*id).into(),
                    display_name: name.map(str::to_owned),
                })
                .collect(),
        );
        self
    }
}
