use super::*;

#[test]
fn the_stand_ins_print_the_exact_macos_formats() {
    let v = GuestVitals {
        pressure_level: Some(4),
        free_percent: Some(3),
        free_pages: Some(812),
        swap_used_mib: Some(1017.5),
        ..GuestVitals::default()
    };
    let vm = text("vm_stat", &[], &v).unwrap();
    assert!(vm.starts_with("Mach Virtual Memory Statistics: (page size of 16384 bytes)\n"));
    assert!(
        vm.contains(&format!("\n{:<30} {:>16}.\n", "Pages free:", 812)),
        "{vm}"
    );
    assert_eq!(vm.lines().count(), 23);
    assert_eq!(
        text("sysctl", &["vm.swapusage"], &v).unwrap(),
        "vm.swapusage: total = 2048.00M  used = 1017.50M  free = 1030.50M  (encrypted)\n"
    );
    assert_eq!(
        text("sysctl", &["-n", "kern.memorystatus_vm_pressure_level"], &v).unwrap(),
        "4\n"
    );
    assert!(
        text("memory_pressure", &["-Q"], &v)
            .unwrap()
            .ends_with("System-wide memory free percentage: 3%\n")
    );
    assert!(text("df", &["-k", "/"], &v).unwrap().contains("     40%  "));
    assert_eq!(text("sysctl", &["-a"], &v), None);
}
