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
