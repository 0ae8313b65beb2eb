//! Fixtures are the exact formats in docs/reference/host-and-conventions.md §3.
use super::*;

#[test]
fn memory_pressure_quiet_gives_the_free_percentage() {
    let t = "The system has 17179869184 (1048576 pages with a page size of 16384).\nSystem-wide memory free percentage: 64%\n";
    assert_eq!(memory_free_percent(t), Some(64));
    assert_eq!(memory_free_percent("The system has 1 (1 pages).\n"), None);
}

#[test]
fn pressure_levels_are_the_dispatch_encoding() {
    assert_eq!(pressure_level("1\n"), Some(1));
    assert_eq!(pressure_level("4"), Some(4));
    assert_eq!(
        pressure_level("3\n"),
        None,
        "xnu's internal enum is not the level"
    );
    assert_eq!(pressure_level(""), None);
}

#[test]
fn swapusage_values_are_mebibytes_with_or_without_encryption() {
    let s = swap_usage(
        "vm.swapusage: total = 2048.00M  used = 1017.50M  free = 1030.50M  (encrypted)\n",
    )
    .unwrap();
    assert_eq!(s.total_bytes, 2048 << 20);
    assert_eq!(s.used_bytes, (1017.5 * 1048576.0) as u64);
    assert_eq!(s.free_bytes, (1030.5 * 1048576.0) as u64);
    let plain = swap_usage("vm.swapusage: total = 0.00M  used = 0.00M  free = 0.00M  \n").unwrap();
    assert_eq!(plain.used_bytes, 0);
    let g = swap_usage("vm.swapusage: total = 13.00G  used = 11.50G  free = 1.50G  (encrypted)");
    assert_eq!(g.unwrap().used_bytes, (11.5 * 1073741824.0) as u64);
    assert_eq!(swap_usage("vm.swapusage: total = lots"), None);
}

#[test]
fn ps_rows_parse_bsd_cpu_times_and_kib_rss() {
    let t = "    1     0   2:10.52  26144 /sbin/launchd\n  812     1 123:45.67 8650752 /System/Library/Frameworks/Virtualization.framework/Versions/A/XPCServices/com.apple.Virtualization.VirtualMachine.xpc/Contents/MacOS/com.apple.Virtualization.VirtualMachine\n  900   812 1-02:03:04  1024 /usr/bin/thing with spaces\n garbage\n";
    let rows = ps_rows(t);
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].pid, 1);
    assert!((rows[0].cpu_seconds - 130.52).abs() < 1e-9);
    assert_eq!(rows[1].ppid, 1);
    assert!((rows[1].cpu_seconds - 7425.67).abs() < 1e-9);
    assert_eq!(rows[1].rss_bytes, 8650752 * 1024);
    assert!(rows[1].comm.ends_with(VZ_XPC_SERVICE));
    assert!((rows[2].cpu_seconds - (86400.0 + 7384.0)).abs() < 1e-9);
    assert_eq!(rows[2].comm, "/usr/bin/thing with spaces");
}

#[test]
fn lsof_names_the_tart_vm_whose_disk_is_open() {
    let t = "p812\nfcwd\nn/\nf3\nn/Users/ci/.tart/vms/tkl-ab12/nvram.bin\nf4\nn/Users/ci/.tart/vms/tkl-ab12/disk.img\n";
    assert_eq!(lsof_tart_vm(t).as_deref(), Some("tkl-ab12"));
    assert_eq!(lsof_tart_vm("p1\nn/tmp/disk.img\n"), None);
}
