use super::*;
use crate::config::{HostDefaults, RunArgs};
use clap::Parser as _;

#[derive(clap::Parser)]
struct T {
    #[command(flatten)]
    a: InstallArgs,
}

fn args(argv: &[&str]) -> InstallArgs {
    T::parse_from(std::iter::once("install").chain(argv.iter().copied())).a
}

fn cfg(run: RunArgs) -> Config {
    let host = HostDefaults {
        hostname: "mac".into(),
        home: "/Users/admin".into(),
    };
    Config::resolve(run, &host).unwrap()
}

fn host(uid: Option<u32>) -> HostFacts {
    HostFacts {
        user: "admin".into(),
        home: "/Users/admin".into(),
        uid,
        current_exe: "/opt/homebrew/bin/tart-kubelet".into(),
        cwd: "/etc".into(),
    }
}

#[test]
fn agent_variant_bootstraps_into_the_users_gui_domain() {
    let (spec, steps) = resolve_install(
        &args(&["--variant", "agent"]),
        &cfg(RunArgs::default()),
        &host(Some(501)),
    )
    .unwrap();
    assert_eq!(spec.variant, Variant::Agent);
    assert!(steps.contains(&Step::Bootstrap {
        domain: "gui/501".into(),
        plist: "/Library/LaunchAgents/dev.tart-kubelet.agent.plist".into(),
    }));
}

#[test]
fn agent_variant_needs_a_known_user() {
    let e = resolve_install(
        &args(&["--variant", "agent"]),
        &cfg(RunArgs::default()),
        &host(None),
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("gui/<uid>"), "{e:#}");
}

#[test]
fn relative_config_is_made_absolute_and_log_dir_follows_the_log_file() {
    let run = RunArgs {
        config: Some("tart-kubelet.toml".into()),
        log_file: Some("/var/log/tkl/agent.log".into()),
        ..RunArgs::default()
    };
    let a = InstallArgs {
        run: run.clone(),
        ..args(&[])
    };
    let (spec, _) = resolve_install(&a, &cfg(run), &host(Some(501))).unwrap();
    assert_eq!(spec.args, ["--config", "/etc/tart-kubelet.toml"]);
    assert_eq!(spec.log_dir, PathBuf::from("/var/log/tkl"));
}

#[test]
fn without_config_the_homebrew_path_is_used() {
    let (spec, _) = resolve_install(&args(&[]), &cfg(RunArgs::default()), &host(None)).unwrap();
    assert_eq!(spec.args, ["--config", DEFAULT_CONFIG_PATH]);
    assert_eq!(
        spec.log_dir,
        PathBuf::from("/Users/admin/Library/Logs/tart-kubelet")
    );
    assert_eq!(spec.binary, PathBuf::from("/opt/homebrew/bin/tart-kubelet"));
}
