//! Fixtures are the exact formats in docs/reference/host-and-conventions.md §3.
use super::*;

#[test]
fn sysctl_name_value_lines_are_split_on_the_first_colon() {
    let m = sysctl_lines(
        "hw.ncpu: 10\nhw.memsize: 17179869184\nhw.model: Mac16,10\nmachdep.cpu.brand_string: Apple M4\n",
    );
    assert_eq!(m["hw.ncpu"], "10");
    assert_eq!(m["hw.memsize"], "17179869184");
    assert_eq!(m["hw.model"], "Mac16,10");
    assert_eq!(m["machdep.cpu.brand_string"], "Apple M4");
}

#[test]
fn ioreg_platform_uuid_is_extracted() {
    let t = "+-o Mac16,10  <class IOPlatformExpertDevice, id 0x100000110, registered, matched, active, busy 0 (0 ms), retain 37>\n    {\n      \"IOPlatformSerialNumber\" = \"ABCD1234\"\n      \"IOPlatformUUID\" = \"5F3A2B1C-0D4E-4F60-8A7B-9C0D1E2F3A4B\"\n    }\n";
    assert_eq!(
        ioreg_platform_uuid(t).as_deref(),
        Some("5F3A2B1C-0D4E-4F60-8A7B-9C0D1E2F3A4B")
    );
}

#[test]
fn bootpd_dhcp_lease_time_is_read_from_the_defaults_dictionary() {
    let t = "{\n    DHCPLeaseTimeSecs = 600;\n}\n";
    assert_eq!(
        defaults_dict_value(t, "DHCPLeaseTimeSecs").as_deref(),
        Some("600")
    );
    assert_eq!(defaults_dict_value("{\n}\n", "DHCPLeaseTimeSecs"), None);
}
