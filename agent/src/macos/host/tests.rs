use super::*;

#[test]
fn sysctl_output_of_a_mac_mini_becomes_static_facts() {
    let text = "hw.ncpu: 10\nhw.memsize: 17179869184\nhw.model: Mac16,10\nmachdep.cpu.brand_string: Apple M4\nkern.osproductversion: 15.3.1\nkern.osrelease: 24.3.0\nkern.bootsessionuuid: 8C1B0A9E-1111-2222-3333-444455556666\nkern.maxproc: 8000\n";
    let f = StaticFacts::from_sysctl(&parse::sysctl_lines(text)).unwrap();
    assert_eq!(f.cpus, 10);
    assert_eq!(f.memory_bytes, 16 << 30);
    assert_eq!(f.model, "Mac16,10");
    assert_eq!(f.chip, "Apple M4");
    assert_eq!(f.os_image, "macOS 15.3.1");
    assert_eq!(f.kernel, "24.3.0");
    assert_eq!(f.max_proc, Some(8000));
}

#[test]
fn missing_cpu_count_means_no_facts() {
    let f = StaticFacts::from_sysctl(&parse::sysctl_lines("hw.memsize: 1\n"));
    assert_eq!(f, None);
}
