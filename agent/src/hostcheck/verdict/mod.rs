//! PURE: one fact -> `None` (fine) or what is wrong, in words an operator can act on. The
//! doctor report and the node's `TartReady` condition both use these.

/// Addresses bootpd hands out in Tart's NAT subnet 192.168.64.0/24 (.2 to .254).
pub(crate) const NAT_ADDRESSES: u32 = 253;

/// The GUI session (`session = …` of `launchctl print gui/<uid>`): only `Aqua` lets
/// Virtualization.framework start macOS guests.
pub(crate) fn gui_session_failure(session: Option<&str>) -> Option<String> {
    match session {
        Some("Aqua") => None,
        Some(other) => Some(format!(
            "the agent's user has no GUI session (found {other:?}): Virtualization.framework will not start macOS guests"
        )),
        None => Some(
            "the agent's user has no GUI session: Virtualization.framework will not start macOS guests"
                .into(),
        ),
    }
}

/// The login keychain: `Err` carries why it is not usable.
pub(crate) fn keychain_failure(state: Result<&(), &String>) -> Option<String> {
    state.err().map(|e| {
        format!("the login keychain is not usable ({e}): macOS 15+ cannot start VMs without it")
    })
}

/// The DHCP lease table: fewer than `min_free` free addresses means a new VM may get an
/// address another VM still holds.
pub(crate) fn dhcp_leases_failure(used: u32, min_free: u32) -> Option<String> {
    let free = NAT_ADDRESSES.saturating_sub(used);
    (free < min_free).then(|| {
        format!(
            "{used} of {NAT_ADDRESSES} DHCP leases in 192.168.64.0/24 are active ({free} free, {min_free} needed): new VMs may get an address in use"
        )
    })
}

/// The softnet program must be owned by root and setuid, else `tart run --net-softnet` fails.
pub(crate) fn softnet_failure(path: &str, stat: Result<(u32, u32), String>) -> Option<String> {
    match stat {
        Err(e) => Some(format!("{path}: {e}")),
        Ok((0, mode)) if mode & 0o4000 != 0 => None,
        Ok(_) => Some(format!(
            "{path} is not root-owned and setuid: `tart run --net-softnet` will fail"
        )),
    }
}

#[cfg(test)]
mod tests;
