//! Stand-ins for the macOS tools the guest launcher's vitals loop calls (`vm_stat`,
//! `memory_pressure`, `sysctl`, `df`), put first on the launcher's `PATH` under
//! `guest_launcher`. Each is a two-line script that calls back into fake-tart, which prints the
//! exact macOS text (docs/reference/host-and-conventions.md §3.1–§3.2) with the values of the VM's
//! `guest_vitals` knob, read at every call. Jetsam reports the knob asks for are created as
//! `JetsamEvent-<n>.ips` files in the guest's `Library/Logs/DiagnosticReports`.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::Failure;
use crate::home::Home;
use crate::knobs::GuestVitals;

/// The internal subcommand the scripts call (not a Tart command).
pub(crate) const GUEST_TOOL: &str = "__fake-tart-guest-tool";

/// The tools stood in for.
pub(crate) const TOOLS: [&str; 4] = ["vm_stat", "memory_pressure", "sysctl", "df"];

const PAGE_SIZE: u64 = 16384;
const SWAP_TOTAL_MIB: f64 = 2048.0;
const DISK_KIB: u64 = 482_797_652;

/// Writes the scripts for VM `vm` into `<vm dir>/guest-bin` and returns that directory.
pub(crate) fn install(home: &Path, vm_dir: &Path, vm: &str) -> io::Result<PathBuf> {
    let bin = vm_dir.join("guest-bin");
    fs::create_dir_all(&bin)?;
    let exe = std::env::current_exe()?;
    for tool in TOOLS {
        let script = format!(
            "#!/bin/sh\nTART_HOME='{}' exec '{}' {GUEST_TOOL} '{vm}' {tool} \"$@\"\n",
            home.display(),
            exe.display()
        );
        let path = bin.join(tool);
        fs::write(&path, script)?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755))?;
    }
    Ok(bin)
}

/// `__fake-tart-guest-tool <vm> <tool> [args…]`: prints what the macOS tool would; `sudo` and
/// `launchctl` are [`crate::guest_launchd`]'s.
pub(crate) fn run(args: &[String]) -> Result<(), Failure> {
    let [vm, tool, rest @ ..] = args else {
        return Err(Failure::validation("usage: guest tool <vm> <tool> [args]"));
    };
    let home = Home::from_env()?;
    match tool.as_str() {
        "sudo" => return crate::guest_launchd::sudo(&home, vm),
        "launchctl" => {
            let user = std::env::var("USER").unwrap_or_default();
            return crate::guest_launchd::launchctl(&home, vm, rest, &user);
        }
        _ => {}
    }
    let knobs = crate::rules::load(&home)?;
    let v = knobs.vm(vm).guest_vitals.unwrap_or_default();
    make_jetsam_reports(&home.vm_dir(vm), v.jetsam_kills.unwrap_or(0))?;
    if v.failing
        .as_ref()
        .is_some_and(|f| f.iter().any(|t| t == tool))
    {
        return Err(Failure::Exit(1));
    }
    let args: Vec<&str> = rest.iter().map(String::as_str).collect();
    let out = match text(tool, &args, &v) {
        Some(t) => t,
        None => {
            eprintln!("{tool}: unsupported arguments {args:?}");
            return Err(Failure::Exit(1));
        }
    };
    print!("{out}");
    Ok(())
}

fn make_jetsam_reports(vm_dir: &Path, n: u64) -> io::Result<()> {
    if n == 0 {
        return Ok(());
    }
    let dir = vm_dir.join("guest/Library/Logs/DiagnosticReports");
    fs::create_dir_all(&dir)?;
    for i in 0..n {
        let f = dir.join(format!("JetsamEvent-{i}.ips"));
        if !f.exists() {
            fs::write(f, "{\"bug_type\":\"298\"}\n")?;
        }
    }
    Ok(())
}

/// PURE: the tool's output for `args`; `None` for arguments the stand-in does not know.
pub(crate) fn text(tool: &str, args: &[&str], v: &GuestVitals) -> Option<String> {
    let free_percent = v.free_percent.unwrap_or(60);
    match (tool, args) {
        ("memory_pressure", ["-Q"]) => Some(format!(
            "The system has 17179869184 (1048576 pages with a page size of {PAGE_SIZE}).\nSystem-wide memory free percentage: {free_percent}%\n"
        )),
        ("sysctl", ["-n", "kern.memorystatus_vm_pressure_level"]) => {
            Some(format!("{}\n", v.pressure_level.unwrap_or(1)))
        }
        ("sysctl", ["-n", "vm.loadavg"]) => Some("{ 1.28 1.18 1.13 }\n".to_owned()),
        ("sysctl", ["vm.swapusage"]) => {
            let used = v.swap_used_mib.unwrap_or(0.0);
            Some(format!(
                "vm.swapusage: total = {SWAP_TOTAL_MIB:.2}M  used = {used:.2}M  free = {:.2}M  (encrypted)\n",
                (SWAP_TOTAL_MIB - used).max(0.0)
            ))
        }
        ("vm_stat", []) => Some(vm_stat(v)),
        ("df", ["-k", _]) => {
            let cap = u64::from(v.disk_used_percent.unwrap_or(40).min(100));
            let used = DISK_KIB * cap / 100;
            Some(format!(
                "Filesystem     1024-blocks      Used Available Capacity  iused     ifree %iused  Mounted on\n/dev/disk3s1s1   {DISK_KIB} {used} {} {cap:>7}%  404167 3013427800    0%   /\n",
                DISK_KIB - used
            ))
        }
        _ => None,
    }
}

/// `vm_stat`'s 22 lines, `printf("%-30s %16llu.\n")` (docs/reference/host-and-conventions.md §3.2).
fn vm_stat(v: &GuestVitals) -> String {
    let rows: [(&str, u64); 22] = [
        ("Pages free:", v.free_pages.unwrap_or(120_000)),
        ("Pages active:", v.active_pages.unwrap_or(300_000)),
        ("Pages inactive:", 280_000),
        ("Pages speculative:", 3021),
        ("Pages throttled:", 0),
        ("Pages wired down:", v.wired_pages.unwrap_or(90_000)),
        ("Pages purgeable:", 9123),
        ("\"Translation faults\":", 912_345_678),
        ("Pages copy-on-write:", 12_345_678),
        ("Pages zero filled:", 345_678_901),
        ("Pages reactivated:", 1_234_567),
        ("Pages purged:", 234_567),
        ("File-backed pages:", 321_098),
        ("Anonymous pages:", 575_245),
        ("Pages stored in compressor:", 812_345),
        (
            "Pages occupied by compressor:",
            v.compressed_pages.unwrap_or(10_000),
        ),
        ("Decompressions:", 3_456_789),
        ("Compressions:", 4_567_890),
        ("Pageins:", 5_678_901),
        ("Pageouts:", 12345),
        ("Swapins:", 23456),
        ("Swapouts:", 34567),
    ];
    let mut out = format!("Mach Virtual Memory Statistics: (page size of {PAGE_SIZE} bytes)\n");
    for (label, n) in rows {
        let _ = writeln!(out, "{label:<30} {n:>16}.");
    }
    out
}

#[cfg(test)]
mod tests;
