//! PURE: one fact -> `None` (fine) or what is wrong, in words an operator can act on. The
//! doctor report and the node's `TartReady` condition both use these.

/// Addresses bootpd hands out in Tart's NAT subnet 192.168.64.0/24 (.2 to .254).
pub const NAT_ADDRESSES: u32 = 253;

/// The GUI session (`session = …` of `launchctl print gui/<uid>`): only `Aqua` lets
/// Virtualization.framework start macOS guests.
pub fn gui_session_failure(session: Option<&str>) -> Option<String> {
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
pub fn keychain_failure(state: Result<&(), &String>) -> Option<String> {
    state.err().map(|e| {
        format!("the login keychain is not usable ({e}): macOS 15+ cannot start VMs without it")
    })
}

/// The DHCP lease table: fewer than `min_free` free addresses means a new VM may get an
/// address another VM still holds.
pub fn dhcp_leases_failure(used: u32, min_free: u32) -> Option<String> {
    let free = NAT_ADDRESSES.saturating_sub(used);
    (free < min_free).then(|| {
        format!(
            "{used} of {NAT_ADDRESSES} DHCP leases in 192.168.64.0/24 are active ({free} free, {min_free} needed): new VMs may get an address in use"
        )
    })
}

/// The softnet program must be owned by root and setuid, else `tart run --net-softnet` fails.
pub fn softnet_failure(path: &str, stat: Result<(u32, u32), String>) -> Option<String> {
    match stat {
        Err(e) => Some(format!("{path}: {e}")),
        Ok((0, mode)) if mode & 0o4000 != 0 => None,
        Ok(_) => Some(format!(
            "{path} is not root-owned and setuid: `tart run --net-softnet` will fail"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_aqua_session_passes() {
        let cases = [
            (Some("Aqua"), false),
            (Some("Background"), true),
            (Some("LoginWindow"), true),
            (None, true),
        ];
        for (session, fails) in cases {
            assert_eq!(gui_session_failure(session).is_some(), fails, "{session:?}");
        }
    }

    #[test]
    fn leases_fail_when_the_free_addresses_drop_under_the_headroom() {
        let cases = [
            (0, 2, false),
            (251, 2, false),
            (252, 2, true),
            (253, 2, true),
            (300, 2, true),
            (252, 1, false),
        ];
        for (used, min_free, fails) in cases {
            assert_eq!(
                dhcp_leases_failure(used, min_free).is_some(),
                fails,
                "{used} used, {min_free} needed"
            );
        }
        assert!(dhcp_leases_failure(253, 2).unwrap().contains("0 free"));
    }

    #[test]
    fn keychain_and_softnet_verdicts() {
        assert_eq!(keychain_failure(Ok(&())), None);
        assert!(
            keychain_failure(Err(&"locked".to_string()))
                .unwrap()
                .contains("locked")
        );
        assert_eq!(softnet_failure("/s", Ok((0, 0o104755))), None);
        assert!(softnet_failure("/s", Ok((0, 0o100755))).is_some());
        assert!(softnet_failure("/s", Ok((501, 0o104755))).is_some());
        assert!(softnet_failure("/s", Err("not found".into())).is_some());
    }
}
