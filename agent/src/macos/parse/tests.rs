//! Fixtures are the exact formats in host-and-conventions.md §3.
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
fn pressure_level_uses_the_dispatch_encoding() {
    assert_eq!(pressure_level("1\n"), Some(PressureLevel::Normal));
    assert_eq!(pressure_level("2"), Some(PressureLevel::Warning));
    assert_eq!(pressure_level("4"), Some(PressureLevel::Critical));
    // xnu's internal values are not what sysctl returns.
    assert_eq!(pressure_level("0"), None);
    assert_eq!(pressure_level("3"), None);
}

#[test]
fn encrypted_swapusage_is_parsed_in_mib() {
    let s = swapusage(
        "vm.swapusage: total = 2048.00M  used = 1017.50M  free = 1030.50M  (encrypted)\n",
    )
    .unwrap();
    assert_eq!(s.total, 2048 << 20);
    assert_eq!(s.used, (1017.5 * 1048576.0) as u64);
    assert_eq!(s.free, (1030.5 * 1048576.0) as u64);
    assert!(s.encrypted);
}

#[test]
fn unencrypted_swapusage_with_trailing_spaces_and_gib_units_is_parsed() {
    let s = swapusage("total = 13.00G  used = 11625.69M  free = 1686.31M  ").unwrap();
    assert_eq!(s.total, 13 << 30);
    assert!(!s.encrypted);
}

#[test]
fn loadavg_braces_are_parsed() {
    assert_eq!(loadavg("{ 1.28 1.18 1.13 }\n"), Some([1.28, 1.18, 1.13]));
    assert_eq!(loadavg("1.28 1.18 1.13"), None);
}

#[test]
fn vm_stat_snapshot_is_parsed_with_its_page_size() {
    let mut t = String::from("Mach Virtual Memory Statistics: (page size of 16384 bytes)\n");
    for (label, n) in [
        ("Pages free:", 12345u64),
        ("Pages active:", 400000),
        ("Pages inactive:", 390000),
        ("Pages speculative:", 1000),
        ("\"Translation faults\":", 123456789),
        ("Pages stored in compressor:", 50000),
    ] {
        t.push_str(&format!("{label:<30} {n:>16}.\n"));
    }
    let v = vm_stat(&t).unwrap();
    assert_eq!(v.page_size, 16384);
    assert_eq!(v.counters["Pages free"], 12345);
    assert_eq!(v.counters["\"Translation faults\""], 123456789);
    assert_eq!(v.bytes("Pages inactive"), Some(390000 * 16384));
    // The example line from the research note parses the same way.
    let doc = "Mach Virtual Memory Statistics: (page size of 16384 bytes)\nPages free:                                   12345.\n";
    assert_eq!(vm_stat(doc).unwrap().counters["Pages free"], 12345);
}

#[test]
fn memory_pressure_quiet_output_gives_the_free_percentage() {
    let t = "The system has 17179869184 (1048576 pages with a page size of 16384).\nSystem-wide memory free percentage: 64%\n";
    assert_eq!(memory_free_percent(t), Some(64));
}

#[test]
fn df_with_inode_columns_and_a_spaced_mount_point_is_parsed() {
    let t = "Filesystem     1024-blocks      Used Available Capacity iused      ifree %iused  Mounted on\n\
             /dev/disk3s5    482797652 301234567 160000000    66% 1234567 1600000000    0%   /System/Volumes/Data\n";
    let r = df_k(t).unwrap();
    assert_eq!(r.filesystem, "/dev/disk3s5");
    assert_eq!(r.total_bytes, 482797652 * 1024);
    assert_eq!(r.available_bytes, 160000000 * 1024);
    assert_eq!(r.mounted_on, "/System/Volumes/Data");
    let t2 = "Filesystem 1024-blocks Used Available Capacity iused ifree %iused  Mounted on\n\
              /dev/disk5s1 1000 200 800 20% 10 90 10% /Volumes/VM Store\n";
    assert_eq!(df_k(t2).unwrap().mounted_on, "/Volumes/VM Store");
}

#[test]
fn df_posix_output_without_inodes_is_parsed() {
    let t = "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/disk3s5 1000 400 600 40% /\n";
    let r = df_k(t).unwrap();
    assert_eq!(r.used_bytes, 400 * 1024);
    assert_eq!(r.mounted_on, "/");
}

#[test]
fn sw_vers_with_one_or_two_tabs_is_parsed() {
    let old = "ProductName:\tMac OS X\nProductVersion:\t10.14.1\nBuildVersion:\t18B75\n";
    assert_eq!(
        sw_vers(old),
        Some(("Mac OS X".into(), "10.14.1".into(), "18B75".into()))
    );
    let new = "ProductName:\t\tmacOS\nProductVersion:\t\t15.3.1\nBuildVersion:\t\t24D70\n";
    assert_eq!(sw_vers(new).unwrap().1, "15.3.1");
}

#[test]
fn pmset_without_cpu_lines_is_not_throttled() {
    let nominal = "Note: No thermal warning level has been recorded\nNote: No performance warning level has been recorded\n";
    assert_eq!(pmset_speed_limit(nominal), 100);
    let throttled = "Note: No thermal warning level has been recorded\nCPU Power notify\n\tCPU_Scheduler_Limit \t= 100\n\tCPU_Available_CPUs \t= 12\n\tCPU_Speed_Limit \t= 70\n";
    assert_eq!(pmset_speed_limit(throttled), 70);
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
