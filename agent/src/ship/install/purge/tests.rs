use std::path::{Path, PathBuf};

use super::model::{Item, Kept, Removal};
use super::plan::is_agents_vm;
use super::*;
use crate::config::{Config, HostDefaults, RunArgs};
use crate::vm_name::VmNaming;

const HOME: &str = "/Users/admin";

fn cfg(run: RunArgs) -> Config {
    let host = HostDefaults {
        hostname: "mac".into(),
        home: HOME.into(),
    };
    Config::resolve(run, &host).unwrap()
}

fn input(cfg: &Config, images: bool) -> PurgeInput<'_> {
    PurgeInput {
        cfg,
        home: Path::new(HOME),
        config_file: Some(Path::new("/opt/homebrew/etc/tart-kubelet/config.toml")),
        launchd_log_dir: Path::new("/Users/admin/Library/Logs/tart-kubelet"),
        images,
    }
}

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

#[test]
fn default_configuration_purges_the_agents_directories_and_keeps_the_cache() {
    let c = cfg(RunArgs::default());
    let plan = plan(&input(&c, false)).unwrap();
    assert_eq!(
        plan.remove,
        [
            (
                Item::GuestDirs,
                Removal::Dir(p("/Users/admin/.tart-kubelet/guest"))
            ),
            (
                Item::VmLogs,
                Removal::Dir(p("/Users/admin/.tart-kubelet/vm-logs"))
            ),
            (
                Item::PodLogs,
                Removal::Dir(p("/Users/admin/.tart-kubelet/pod-logs"))
            ),
            (
                Item::CertDir,
                Removal::Dir(p("/Users/admin/.tart-kubelet/pki"))
            ),
            (
                Item::LaunchdLogs,
                Removal::FilesIn(
                    p("/Users/admin/Library/Logs/tart-kubelet"),
                    &["launchd.stdout.log", "launchd.stderr.log"]
                )
            ),
        ]
    );
    assert_eq!(
        plan.tidy,
        [
            p("/Users/admin/Library/Logs/tart-kubelet"),
            p("/Users/admin/.tart-kubelet")
        ]
    );
    assert_eq!(
        plan.keep,
        [
            (Kept::ImageCache, p("/Users/admin/.tart/cache/OCIs")),
            (
                Kept::ConfigFile,
                p("/opt/homebrew/etc/tart-kubelet/config.toml")
            ),
        ]
    );
}

#[test]
fn images_flag_removes_the_oci_cache_and_named_key_and_log_files_go_too() {
    let c = cfg(RunArgs {
        tls_cert_file: Some(p("/etc/tart-kubelet/serving.crt")),
        tls_private_key_file: Some(p("/etc/tart-kubelet/serving.key")),
        log_file: Some(p("/Users/admin/Library/Logs/tart-kubelet/agent.log")),
        ..RunArgs::default()
    });
    let plan = plan(&input(&c, true)).unwrap();
    for want in [
        (
            Item::ServingCert,
            Removal::File(p("/etc/tart-kubelet/serving.crt")),
        ),
        (
            Item::ServingKey,
            Removal::File(p("/etc/tart-kubelet/serving.key")),
        ),
        (
            Item::AgentLog,
            Removal::RotatedFile(p("/Users/admin/Library/Logs/tart-kubelet/agent.log")),
        ),
        (
            Item::ImageCache,
            Removal::Dir(p("/Users/admin/.tart/cache/OCIs")),
        ),
    ] {
        assert!(plan.remove.contains(&want), "{want:?} missing: {plan:?}");
    }
    assert!(plan.keep.iter().all(|(k, _)| *k != Kept::ImageCache));
}

#[test]
fn paths_that_could_hold_what_is_not_the_agents_are_refused() {
    type Set = fn(&mut RunArgs);
    let cases: &[(&str, Set, &str)] = &[
        (
            "root",
            |a| a.guest_dir = Some(p("/")),
            "guest_dir / is `/` or a top-level directory",
        ),
        (
            "top level",
            |a| a.pod_log_dir = Some(p("/tmp")),
            "pod_log_dir /tmp is `/` or a top-level directory",
        ),
        (
            "home",
            |a| a.vm_log_dir = Some(p(HOME)),
            "vm_log_dir /Users/admin is $HOME (/Users/admin) or contains it",
        ),
        (
            "above home",
            |a| a.cert_dir = Some(p("/Users/x/..")),
            "cert_dir /Users/x/.. has `.` or `..` components",
        ),
        (
            "parent of home",
            |a| a.guest_dir = Some(p("/Users")),
            "guest_dir /Users is `/` or a top-level directory",
        ),
        (
            "tart home",
            |a| a.guest_dir = Some(p("/Users/admin/.tart")),
            "guest_dir /Users/admin/.tart is TART_HOME (/Users/admin/.tart) or contains it: it holds VMs the agent did not create",
        ),
        (
            "shared",
            |a| a.pod_log_dir = Some(p("/Users/admin/Library/Logs")),
            "pod_log_dir /Users/admin/Library/Logs is a directory shared with other software",
        ),
        (
            "brew",
            |a| a.cert_dir = Some(p("/opt/homebrew/etc")),
            "cert_dir /opt/homebrew/etc is a directory shared with other software",
        ),
        (
            "holds the kubeconfig",
            |a| {
                a.kubeconfig = Some(p("/Users/admin/agent/kubeconfig"));
                a.cert_dir = Some(p("/Users/admin/agent"));
            },
            "cert_dir /Users/admin/agent holds the kubeconfig (revoke its credentials in the cluster) /Users/admin/agent/kubeconfig",
        ),
        (
            "holds the cache",
            |a| a.vm_log_dir = Some(p("/Users/admin/.tart/cache")),
            "vm_log_dir /Users/admin/.tart/cache holds the OCI image cache (pass --purge-images to remove it) /Users/admin/.tart/cache/OCIs",
        ),
    ];
    for (name, set, want) in cases {
        let mut a = RunArgs::default();
        set(&mut a);
        let c = cfg(a);
        let err = plan(&input(&c, false)).expect_err(name);
        assert_eq!(
            err.to_string(),
            format!("refusing to purge, nothing was removed: {want}"),
            "{name}"
        );
    }
}

#[test]
fn an_image_cache_inside_tart_home_is_not_refused_for_being_there() {
    let c = cfg(RunArgs::default());
    assert!(plan(&input(&c, true)).is_ok());
}

#[test]
fn only_pod_vms_and_goldens_of_the_prefix_are_the_agents() {
    let n = VmNaming::new("tkl-").unwrap();
    for (vm, ours) in [
        ("tkl-0f6c7a1e-2b6d-4f0e-9a51-0c1d2e3f4a5b", true),
        ("tkl-golden-0123456789abcdef0123456789abc", true),
        ("tkl-golden-0123", false),
        ("tkl-mine", false),
        ("other-0f6c7a1e-2b6d-4f0e-9a51-0c1d2e3f4a5b", false),
        ("macos-sequoia", false),
    ] {
        assert_eq!(is_agents_vm(&n, vm), ours, "{vm}");
    }
}

#[test]
fn dry_run_text_names_the_vms_rule_every_path_and_what_is_kept() {
    let c = cfg(RunArgs::default());
    let text = render(&plan(&input(&c, false)).unwrap(), &c.tart_home);
    assert_eq!(
        text,
        "purge:\n\
         - stop, then delete, every local VM named tkl-<pod uid> or tkl-golden-<digest hex> in TART_HOME /Users/admin/.tart\n\
         - rm -rf /Users/admin/.tart-kubelet/guest (guest directories (Secret values))\n\
         - rm -rf /Users/admin/.tart-kubelet/vm-logs (VM logs)\n\
         - rm -rf /Users/admin/.tart-kubelet/pod-logs (container logs)\n\
         - rm -rf /Users/admin/.tart-kubelet/pki (kubelet API serving keys (cert_dir))\n\
         - rm -f /Users/admin/Library/Logs/tart-kubelet/launchd.stdout.log /Users/admin/Library/Logs/tart-kubelet/launchd.stderr.log (launchd logs)\n\
         - rmdir /Users/admin/Library/Logs/tart-kubelet if empty\n\
         - rmdir /Users/admin/.tart-kubelet if empty\n\
         - keep /Users/admin/.tart/cache/OCIs (OCI image cache (pass --purge-images to remove it))\n\
         - keep /opt/homebrew/etc/tart-kubelet/config.toml (configuration file)\n"
    );
}
