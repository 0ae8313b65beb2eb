//! `tart-kubelet doctor`: preflight checks with actionable messages.
//!
//! Order: tart, `TART_HOME` and its space, the two-VM limit, the kubelet API, the client
//! certificate's expiry ([`client_cert`]), kubeconfig, RBAC (one
//! SelfSubjectAccessReview per permission [`super::rbac`] lists for the configured identity;
//! with `--identity node` also [`identity`]: are the credentials this node's?), then the macOS
//! host: GUI
//! session, auto-login, DHCP lease time, login keychain, softnet. macOS checks report
//! "skipped" elsewhere. Facts come from [`probe`] (I/O with deadlines), verdicts from
//! [`checks`] (pure). Exit status 1 when a check fails (or warns, with `--strict`).
//! With `--smoke IMAGE` none of these run: [`smoke`] is the first-day self-test instead.
use std::process::ExitCode;
use std::time::Duration;

use super::DoctorArgs;
use crate::{
    config::{Config, Identity},
    errors::error_chain,
};

pub(crate) mod checks;
mod client_cert;
pub(crate) mod identity;
pub(crate) mod probe;
mod profiles;
mod serving;
pub(crate) mod smoke;

use checks::{Check, Status};

/// `tart-kubelet doctor`.
///
/// # Errors
/// Only when the report cannot be written.
pub(crate) async fn doctor(args: &DoctorArgs, cfg: &Config) -> anyhow::Result<ExitCode> {
    let cfg = &super::effective_config(&args.run, cfg)?;
    let checks = run_checks(args, cfg).await;
    if args.json {
        for c in &checks {
            println!(
                "{}",
                serde_json::json!({
                    "check": c.name,
                    "status": c.status.as_str(),
                    "message": c.message,
                    "fix": c.fix,
                })
            );
        }
    } else {
        print!("{}", checks::render_text(&checks));
    }
    Ok(ExitCode::from(checks::exit_code(&checks, args.strict)))
}

/// Runs every check in order.
pub(crate) async fn run_checks(args: &DoctorArgs, cfg: &Config) -> Vec<Check> {
    let deadline = Duration::from_secs(args.call_timeout.max(1));
    let mut out = vec![Check::new(
        "config",
        Status::Ok,
        format!(
            "node {}, TART_HOME {}",
            cfg.node_name,
            cfg.tart_home.display()
        ),
    )];

    let (tart, tart_path) = probe::tart(cfg, deadline).await;
    out.push(checks::tart_check(&tart, cfg.min_tart_version));
    out.extend(checks::tart_home_checks(&probe::tart_home(cfg).await));
    let foreign = match &tart_path {
        Some(p) => probe::foreign_running_vms(cfg, p, deadline)
            .await
            .unwrap_or_else(|e| {
                out.push(
                    Check::new(
                        "tart-list",
                        Status::Warn,
                        format!("`tart list` failed: {e}"),
                    )
                    .fix("run `tart list` as the agent's user"),
                );
                Vec::new()
            }),
        None => Vec::new(),
    };
    out.push(checks::vm_slots_check(cfg.vm_slots, &foreign));
    // The client CA as the agent resolves it: the option, else the kubeconfig's CA.
    let kubeconfig_ca = match cfg.client_ca_file {
        Some(_) => None,
        None => probe::kube_config(cfg)
            .await
            .ok()
            .and_then(|(c, _, _)| c.root_cert),
    };
    let client_ca =
        crate::config::client_ca(cfg.client_ca_file.as_deref(), kubeconfig_ca.as_deref());
    let serving = match crate::kubelet_api::settings(cfg, client_ca.clone()) {
        Some(s) => {
            serving::Serving::Files(crate::kubelet_api::preflight(&s).map_err(|e| error_chain(&e)))
        }
        None => {
            // The pending request's status needs the API; --offline reads the directory only.
            let client = match args.offline {
                true => None,
                false => probe::client(cfg).await.ok().map(|(c, _)| c),
            };
            let p = crate::kubelet_api::csr::progress(
                cfg.cert_dir.clone(),
                &cfg.node_name,
                client,
                deadline,
            )
            .await;
            serving::Serving::Requested(p)
        }
    };
    out.push(serving::kubelet_api_check(
        cfg.kubelet_port,
        &serving,
        client_ca.as_ref(),
    ));

    out.push(client_cert::client_certificate_check(
        &cfg.node_name,
        &client_certificate(cfg).await,
        cfg.bootstrap_kubeconfig.is_some(),
        std::time::SystemTime::now(),
    ));

    if args.offline {
        out.push(Check::new(
            "kubeconfig",
            Status::Skipped,
            "skipped: --offline",
        ));
        out.push(Check::new("rbac", Status::Skipped, "skipped: --offline"));
    } else {
        out.extend(api_checks(cfg, deadline).await);
    }

    out.extend(macos_checks(deadline).await);
    out.push(match &args.softnet {
        None => Check::new("softnet", Status::Skipped, "skipped: no --softnet given"),
        Some(p) => checks::softnet_check(
            &p.display().to_string(),
            crate::hostcheck::owner_and_mode(p),
        ),
    });
    let softnet = crate::hostcheck::profiles::softnet_fact(
        args.softnet.as_deref().or(cfg.softnet_program.as_deref()),
        std::env::var_os("PATH").as_deref(),
        cfg!(target_os = "macos"),
    );
    let interfaces = crate::hostcheck::profiles::interfaces_fact(cfg!(target_os = "macos"));
    out.extend(profiles::profile_checks(
        &cfg.vm_profiles,
        &softnet,
        &interfaces,
    ));
    out
}

/// The client certificate of the configured (or inferred) kubeconfig; read from files only.
async fn client_certificate(cfg: &Config) -> client_cert::Found {
    use crate::credentials::kubeconfig::{ReadError, read_validity, validity_of_config};
    use client_cert::Found;
    match &cfg.kubeconfig {
        Some(path) => match read_validity(path) {
            Ok(v) => Found::Certificate(v),
            Err(ReadError::NoCertificate(_)) => Found::NoCertificate,
            Err(ReadError::NoKubeconfig(_)) => Found::NoKubeconfig,
            Err(e) => Found::Unreadable(error_chain(&e)),
        },
        None => match kube::Config::infer().await {
            Ok(c) => validity_of_config(&c).map_or(Found::NoCertificate, Found::Certificate),
            Err(_) => Found::NoKubeconfig,
        },
    }
}

async fn api_checks(cfg: &Config, deadline: Duration) -> Vec<Check> {
    let fix = "pass --kubeconfig with a kubeconfig for the agent's identity (docs/install.md#kubeconfig-and-rbac)";
    let (client, who) = match probe::client(cfg).await {
        Ok(c) => c,
        Err(e) => {
            return vec![
                Check::new("kubeconfig", Status::Fail, e).fix(fix),
                Check::new("rbac", Status::Skipped, "skipped: no usable kubeconfig"),
            ];
        }
    };
    match probe::api_version(&client, deadline).await {
        Ok(v) => {
            let perms = super::rbac::required(cfg.identity);
            let reviews = probe::access_reviews(&client, &perms, &cfg.node_name, deadline).await;
            let mut out = vec![
                Check::new("kubeconfig", Status::Ok, format!("API server {v} reachable as {who}")),
                checks::rbac_check(&who, cfg.identity, &reviews),
            ];
            if cfg.identity == Identity::Node {
                let (own, other) =
                    probe::lease_reviews(&client, &cfg.node_name, identity::OTHER_LEASE, deadline)
                        .await;
                out.push(identity::node_identity_check(&cfg.node_name, &own, &other));
            }
            out
        }
        Err(e) => vec![
            Check::new("kubeconfig", Status::Fail, format!("API server not usable as {who}: {e}"))
                .fix("check the server URL, the CA and the credentials in the kubeconfig, and the network"),
            Check::new("rbac", Status::Skipped, "skipped: API server not reachable"),
        ],
    }
}

#[cfg(target_os = "macos")]
async fn macos_checks(deadline: Duration) -> Vec<Check> {
    use crate::macos::{launchctl, parse, shell};
    let user = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_default();
    let uid = nix::unistd::getuid().as_raw();
    let run = |prog: &'static str, args: Vec<String>| async move {
        tokio::task::spawn_blocking(move || {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            shell::run(prog, &a, deadline).map_err(|e| e.to_string())
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()))
    };
    let session = run("/bin/launchctl", vec!["print".into(), format!("gui/{uid}")])
        .await
        .ok()
        .and_then(|t| launchctl::parse_domain_session(&t));
    let auto = run(
        "/usr/bin/defaults",
        vec![
            "read".into(),
            "/Library/Preferences/com.apple.loginwindow".into(),
            "autoLoginUser".into(),
        ],
    )
    .await
    .ok()
    .map(|s| s.trim().to_string());
    let lease = run(
        "/usr/bin/defaults",
        vec![
            "read".into(),
            "/Library/Preferences/SystemConfiguration/com.apple.InternetSharing.default.plist"
                .into(),
            "bootpd".into(),
        ],
    )
    .await
    .ok()
    .and_then(|t| parse::defaults_dict_value(&t, "DHCPLeaseTimeSecs"))
    .and_then(|v| v.parse().ok());
    let keychain = checks::keychain_check(
        run(
            "/usr/bin/security",
            vec!["show-keychain-info".into(), "login.keychain".into()],
        )
        .await
        .map(|_| ()),
    );
    vec![
        checks::gui_session_check(session.as_deref(), &user),
        checks::auto_login_check(auto.as_deref(), &user),
        checks::dhcp_lease_check(lease),
        keychain,
    ]
}

#[cfg(not(target_os = "macos"))]
async fn macos_checks(_deadline: Duration) -> Vec<Check> {
    ["gui-session", "auto-login", "dhcp-lease", "keychain"]
        .into_iter()
        .map(Check::macos_only)
        .collect()
}
