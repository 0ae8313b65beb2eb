//! PURE: count the active leases in bootpd's lease table (`/var/db/dhcpd_leases`), one
//! `{ … }` block per lease with `ip_address=` and `lease=0x<expiry, Unix seconds>`.

/// Tart's NAT subnet prefix.
const NAT_PREFIX: &str = "192.168.64.";

/// Leases in Tart's NAT subnet that expire after `now` (Unix seconds).
pub(crate) fn active_leases(table: &str, now: u64) -> u32 {
    let mut count = 0;
    let (mut ip, mut expiry): (Option<&str>, Option<u64>) = (None, None);
    for line in table.lines().map(str::trim) {
        match line {
            "{" => (ip, expiry) = (None, None),
            "}" => {
                if ip.is_some_and(|a| a.starts_with(NAT_PREFIX)) && expiry.is_some_and(|e| e > now)
                {
                    count += 1;
                }
            }
            _ => match line.split_once('=') {
                Some(("ip_address", v)) => ip = Some(v),
                Some(("lease", v)) => {
                    expiry = u64::from_str_radix(v.trim_start_matches("0x"), 16).ok();
                }
                _ => {}
            },
        }
    }
    count
}

#[cfg(test)]
mod tests;
