//! PURE: count the active leases in bootpd's lease table (`/var/db/dhcpd_leases`), one
//! `{ … }` block per lease with `ip_address=` and `lease=0x<expiry, Unix seconds>`.

/// Tart's NAT subnet prefix.
const NAT_PREFIX: &str = "192.168.64.";

/// Leases in Tart's NAT subnet that expire after `now` (Unix seconds).
pub fn active_leases(table: &str, now: u64) -> u32 {
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
mod tests {
    use super::*;

    const TABLE: &str = "{
\tname=admins-Virtual-Machine
\tip_address=192.168.64.2
\thw_address=1,8e:4f:11:22:33:44
\tidentifier=1,8e:4f:11:22:33:44
\tlease=0x6800a000
}
{
\tname=old
\tip_address=192.168.64.3
\thw_address=1,8e:4f:11:22:33:45
\tidentifier=1,8e:4f:11:22:33:45
\tlease=0x67000000
}
{
\tname=bridge
\tip_address=10.0.0.9
\thw_address=1,8e:4f:11:22:33:46
\tlease=0x6800a000
}
";

    #[test]
    fn only_unexpired_leases_in_the_nat_subnet_count() {
        assert_eq!(active_leases(TABLE, 0x6700_0000 - 1), 2);
        assert_eq!(active_leases(TABLE, 0x6700_0000), 1);
        assert_eq!(active_leases(TABLE, 0x6800_a000), 0);
        assert_eq!(active_leases("", 0), 0);
    }
}
