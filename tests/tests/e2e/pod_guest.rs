//! End to end on the real control plane: what a Pod gives its container reaches the guest.
//! fake-tart acts as the guest by running the real guest launcher (`packaging/guest/`) against
//! the agent's `--dir` shares, so these tests exercise what users bake into their images; the
//! checks that matter most run again on a guest-agent-only image, where the agent delivers the
//! launcher through `tart exec` (docs/guest.md, "Delivery").

use crate::pod_support;

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use k8s_openapi::{
    ByteString,
    api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    },
    api::core::v1::{
        ConfigMap, ConfigMapEnvSource, ConfigMapVolumeSource, EnvFromSource, EnvVar, EnvVarSource,
        KeyToPath, ObjectFieldSelector, Pod, ProjectedVolumeSource, Secret, SecretKeySelector,
        SecretVolumeSource, ServiceAccount, ServiceAccountTokenProjection, Volume, VolumeMount,
        VolumeProjection,
    },
};
use kube::{
    Api, ResourceExt,
    api::{ObjectMeta, PostParams},
};
use pod_support::{Env, phase, terminated, waiting_reason};
use tart_kubelet_tests::{
    cluster::{unique, wait_for},
    fake::{GuestImage, Knobs, VmKnob},
};

/// fake-tart runs the guest launcher for every VM.
fn guest_knobs() -> Knobs {
    image_knobs(GuestImage::Baked)
}

/// Every VM is an image of kind `image`: the launcher baked in, or delivered by the agent
/// through the guest agent.
fn image_knobs(image: GuestImage) -> Knobs {
    Knobs::new().with_vm("*", VmKnob::default().guest_image(image))
}

/// The hex of `bytes`, as the guest's script prints values (`od -An -tx1`, spaces removed).
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A shell script that prints `NAME=<hex of value>` for each name (`-` when unset).
fn dump_script(names: &[&str]) -> String {
    let mut s = String::new();
    for n in names {
        s.push_str(&format!(
            "if [ \"${{{n}+set}}\" = set ]; then printf '{n}=%s\\n' \"$(printf '%s' \"${n}\" | od -An -tx1 | tr -d ' \\n')\"; else echo '{n}=-'; fi\n"
        ));
    }
    s
}

impl GuestPaths for Env {}

/// Where the guest sees things under fake-tart.
trait GuestPaths {
    fn status_file(env: &Env, pod: &Pod, name: &str) -> PathBuf {
        env.guest_dir
            .join(Env::vm_of(pod))
            .join("status")
            .join(name)
    }
    /// A path as the guest sees it (its root is `<vm dir>/guest`).
    fn in_guest(env: &Env, pod: &Pod, path: &str) -> PathBuf {
        env.home
            .vm_dir(&Env::vm_of(pod))
            .join("guest")
            .join(path.trim_start_matches('/'))
    }
}

fn secret(name: &str, data: &[(&str, &[u8])]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.to_vec())))
                .collect(),
        ),
        ..Default::default()
    }
}

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..Default::default()
    }
}

fn env_secret(name: &str, secret: &str, key: &str, optional: bool) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.into(),
                key: key.into(),
                optional: Some(optional),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn env_field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The guest's stdout, once its command has exited.
async fn guest_stdout(env: &Env, pod: &Pod) -> String {
    let exit = Env::status_file(env, pod, "exit_code");
    let r = wait_for(pod_support::WAIT, || {
        let exit = exit.clone();
        async move { std::fs::read_to_string(&exit).ok() }
    })
    .await;
    let launcher_log = std::fs::read_to_string(Env::status_file(env, pod, "launcher.log"));
    assert!(
        r.is_ok(),
        "the guest's command never exited; launcher log: {launcher_log:?}\n{}",
        env.agent_log()
    );
    assert_eq!(r.unwrap().trim(), "0", "launcher log: {launcher_log:?}");
    std::fs::read_to_string(Env::status_file(env, pod, "stdout")).unwrap_or_default()
}

fn parse_dump(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Every file under `dir` (not following symlinks) whose bytes contain `needle`.
fn files_containing(dir: &std::path::Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut out = vec![];
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            out.extend(files_containing(&p, needle));
        } else if t.is_file()
            && std::fs::read(&p)
                .map(|b| b.windows(needle.len()).any(|w| w == needle))
                .unwrap_or(false)
        {
            out.push(p);
        }
    }
    out
}

/// The command lines of every process on the machine.
fn all_command_lines() -> String {
    let mut s = String::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(b) = std::fs::read(e.path().join("cmdline")) {
            s.push_str(&String::from_utf8_lossy(&b).replace('\0', " "));
            s.push('\n');
        }
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_shaped_pod_gives_its_guest_every_value_byte_for_byte_and_never_leaks_a_secret() {
    every_value_byte_for_byte(GuestImage::Baked).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_shaped_pod_on_a_guest_agent_only_image_gets_every_value_byte_for_byte() {
    every_value_byte_for_byte(GuestImage::AgentOnly).await;
}

/// A runner-shaped Pod on an image of kind `image` gives its guest every value byte for byte
/// and never leaks a secret.
async fn every_value_byte_for_byte(image: GuestImage) {
    let mut env = Env::new("guest-runner", image_knobs(image), &[]).await;
    env.start_agent();
    let marker = unique("MARKER-jit");
    // Quotes, newlines, `$`, a backquote, `=` and non-ASCII: all must arrive as they are.
    let jit = format!("{marker}\n'q' \"dq\" $HOME `x` a=b ü\n\n");
    let secrets: Api<Secret> = Api::namespaced(env.admin.clone(), &env.ns);
    let pp = PostParams::default();
    secrets
        .create(&pp, &secret("runner-jit", &[("jitconfig", jit.as_bytes())]))
        .await
        .expect("secret");
    let cms: Api<ConfigMap> = Api::namespaced(env.admin.clone(), &env.ns);
    cms.create(
        &pp,
        &config_map(
            "runner-cfg",
            &[
                ("url", "https://github.com/acme"),
                ("labels", "macos,arm64"),
            ],
        ),
    )
    .await
    .expect("configmap");
    // Without a prefix, `1bad` is not a valid variable name: skipped with kubelet's warning.
    cms.create(
        &pp,
        &config_map("runner-extra", &[("1bad", "x"), ("EXTRA", "y")]),
    )
    .await
    .expect("configmap");
    let mut pod = env.pod("runner");
    {
        let spec = pod.spec.as_mut().unwrap();
        spec.restart_policy = Some("Never".into());
        let c = &mut spec.containers[0];
        c.env_from = Some(vec![
            EnvFromSource {
                prefix: Some("CFG_".into()),
                config_map_ref: Some(ConfigMapEnvSource {
                    name: "runner-cfg".into(),
                    optional: None,
                }),
                ..Default::default()
            },
            EnvFromSource {
                config_map_ref: Some(ConfigMapEnvSource {
                    name: "runner-extra".into(),
                    optional: None,
                }),
                ..Default::default()
            },
        ]);
        c.env = Some(vec![
            env_secret(
                "ACTIONS_RUNNER_INPUT_JITCONFIG",
                "runner-jit",
                "jitconfig",
                false,
            ),
            env_secret("OPTIONAL_MISSING", "runner-jit", "nope", true),
            env_field("POD_NAME", "metadata.name"),
            env_field("NODE", "spec.nodeName"),
            EnvVar {
                name: "GREETING".into(),
                value: Some("hello $(POD_NAME) $$(POD_NAME)".into()),
                ..Default::default()
            },
        ]);
        c.command = Some(vec!["/bin/sh".into(), "-c".into()]);
        let names = [
            "ACTIONS_RUNNER_INPUT_JITCONFIG",
            "CFG_url",
            "CFG_labels",
            "EXTRA",
            "OPTIONAL_MISSING",
            "POD_NAME",
            "NODE",
            "GREETING",
        ];
        c.args = Some(vec![format!(
            "{}echo ARG=$(POD_NAME)\nsleep 3\n",
            dump_script(&names)
        )]);
    }
    let created = env.create(&pod).await;
    // While the guest's command runs, no process on the machine shows the secret.
    let running = env
        .wait_pod("runner", "running", |p| {
            phase(p) == "Running" || phase(p) == "Succeeded"
        })
        .await;
    let cmdlines = all_command_lines();
    assert!(
        !cmdlines.contains(&marker),
        "a command line holds the secret"
    );
    let out = guest_stdout(&env, &created).await;
    let got = parse_dump(&out);
    let want = |v: &[u8]| hex(v);
    assert_eq!(
        got["ACTIONS_RUNNER_INPUT_JITCONFIG"],
        want(jit.as_bytes()),
        "{out}"
    );
    assert_eq!(got["CFG_url"], want(b"https://github.com/acme"));
    assert_eq!(got["CFG_labels"], want(b"macos,arm64"));
    assert_eq!(got["EXTRA"], want(b"y"));
    assert_eq!(
        got["OPTIONAL_MISSING"], "-",
        "a missing optional key is skipped"
    );
    assert_eq!(got["POD_NAME"], want(b"runner"));
    assert_eq!(got["NODE"], want(env.node.as_bytes()));
    assert_eq!(got["GREETING"], want(b"hello runner $(POD_NAME)"));
    assert!(out.contains("ARG=runner\n"), "args are expanded: {out}");
    let done = env
        .wait_pod("runner", "succeeded", |p| phase(p) == "Succeeded")
        .await;
    let _ = running;
    // Kubelet's warning for the skipped key.
    let evs = env
        .wait_event("runner", "InvalidEnvironmentVariableNames")
        .await;
    let note = &evs
        .iter()
        .find(|(_, r, _)| r == "InvalidEnvironmentVariableNames")
        .unwrap()
        .2;
    assert!(note.contains("1bad"), "{note}");
    // The secret is nowhere but in the guest's own files.
    let status = serde_json::to_string(&done.status).unwrap();
    assert!(!status.contains(&marker), "pod status holds the secret");
    let events = format!("{:?}", env.events("runner").await);
    assert!(!events.contains(&marker), "an event holds the secret");
    let log = std::fs::read(&env.log_path).unwrap();
    assert!(
        !log.windows(marker.len()).any(|w| w == marker.as_bytes()),
        "the agent's log holds the secret"
    );
    let in_home = files_containing(env.home.path(), marker.as_bytes());
    assert!(
        in_home.is_empty(),
        "fake-tart's records hold the secret: {in_home:?}"
    );
    let in_vm_logs = files_containing(&env.vm_log_dir, marker.as_bytes());
    assert!(
        in_vm_logs.is_empty(),
        "a VM log holds the secret: {in_vm_logs:?}"
    );
    // Only the control share holds it, readable by the agent's user alone.
    let held = files_containing(&env.guest_dir, marker.as_bytes());
    assert!(!held.is_empty(), "the control share holds the value");
    for f in held {
        assert!(
            f.components().any(|c| c.as_os_str() == "control"),
            "{f:?} is outside the control share"
        );
    }
    // Deleting the Pod removes its VM and its guest directory.
    env.delete("runner", 5).await;
    env.wait_gone("runner").await;
    let vm_guest = env.guest_dir.join(Env::vm_of(&created));
    let r = wait_for(Duration::from_secs(30), || {
        let d = vm_guest.clone();
        async move { (!d.exists()).then_some(()) }
    })
    .await;
    assert!(r.is_ok(), "{vm_guest:?} left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_whose_secret_is_missing_waits_then_starts_by_itself_once_it_exists() {
    let mut env = Env::new("guest-missing", guest_knobs(), &[]).await;
    env.start_agent();
    let mut pod = env.pod("late");
    {
        let c = &mut pod.spec.as_mut().unwrap().containers[0];
        c.env = Some(vec![env_secret("TOKEN", "late-secret", "token", false)]);
        c.command = Some(vec!["/bin/sh".into(), "-c".into(), dump_script(&["TOKEN"])]);
        pod.spec.as_mut().unwrap().restart_policy = Some("Never".into());
    }
    let created = env.create(&pod).await;
    let waiting = env
        .wait_pod("late", "CreateContainerConfigError", |p| {
            waiting_reason(p).as_deref() == Some("CreateContainerConfigError")
        })
        .await;
    let msg = pod_support::waiting_message(&waiting);
    assert_eq!(msg, "secret \"late-secret\" not found");
    assert!(
        !env.vms().contains(&Env::vm_of(&created)),
        "a VM was cloned for a Pod that waits on its Secret: {:?}",
        env.vms()
    );
    let evs = env.wait_event("late", "Failed").await;
    assert!(
        evs.iter()
            .any(|(t, r, n)| t == "Warning" && r == "Failed" && n.contains("late-secret")),
        "{evs:?}"
    );
    let secrets: Api<Secret> = Api::namespaced(env.admin.clone(), &env.ns);
    secrets
        .create(
            &PostParams::default(),
            &secret("late-secret", &[("token", b"s3cr3t")]),
        )
        .await
        .expect("secret");
    env.wait_pod("late", "succeeded", |p| phase(p) == "Succeeded")
        .await;
    let out = guest_stdout(&env, &created).await;
    assert_eq!(parse_dump(&out)["TOKEN"], hex(b"s3cr3t"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volumes_reach_the_guest_and_follow_their_objects() {
    volumes_reach_the_guest(GuestImage::Baked).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volumes_reach_a_guest_agent_only_image_and_follow_their_objects() {
    volumes_reach_the_guest(GuestImage::AgentOnly).await;
}

/// Volumes reach a guest of kind `image` byte for byte and follow their objects.
async fn volumes_reach_the_guest(image: GuestImage) {
    let mut env = Env::new(
        "guest-volumes",
        image_knobs(image),
        &["--token-refresh-max", "5s"],
    )
    .await;
    env.start_agent();
    let pp = PostParams::default();
    let cms: Api<ConfigMap> = Api::namespaced(env.admin.clone(), &env.ns);
    cms.create(&pp, &config_map("app", &[("mode", "one")]))
        .await
        .expect("configmap");
    // A 1 MiB binary value, NULs and all.
    let blob: Vec<u8> = (0..(1u32 << 20))
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let secrets: Api<Secret> = Api::namespaced(env.admin.clone(), &env.ns);
    secrets
        .create(&pp, &secret("blob", &[("data.bin", &blob)]))
        .await
        .expect("secret");
    let sas: Api<ServiceAccount> = Api::namespaced(env.admin.clone(), &env.ns);
    sas.create(
        &pp,
        &ServiceAccount {
            metadata: ObjectMeta {
                name: Some("runner".into()),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await
    .expect("service account");
    let mut pod = env.pod("vols");
    {
        let spec = pod.spec.as_mut().unwrap();
        spec.service_account_name = Some("runner".into());
        spec.volumes = Some(vec![
            Volume {
                name: "cfg".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: "app".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            Volume {
                name: "blob".into(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some("blob".into()),
                    items: Some(vec![KeyToPath {
                        key: "data.bin".into(),
                        path: "nested/data.bin".into(),
                        mode: Some(0o400),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
                ..Default::default()
            },
            Volume {
                name: "token".into(),
                projected: Some(ProjectedVolumeSource {
                    sources: Some(vec![VolumeProjection {
                        service_account_token: Some(ServiceAccountTokenProjection {
                            path: "token".into(),
                            expiration_seconds: Some(600),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ]);
        let c = &mut spec.containers[0];
        c.volume_mounts = Some(vec![
            VolumeMount {
                name: "cfg".into(),
                mount_path: "/etc/app".into(),
                ..Default::default()
            },
            VolumeMount {
                name: "blob".into(),
                mount_path: "/opt/blob".into(),
                ..Default::default()
            },
            VolumeMount {
                name: "token".into(),
                mount_path: "/var/run/secrets/tokens".into(),
                ..Default::default()
            },
        ]);
        c.command = Some(vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()]);
    }
    let created = env.create(&pod).await;
    env.wait_pod("vols", "running", |p| phase(p) == "Running")
        .await;
    let mode_file = Env::in_guest(&env, &created, "/etc/app/mode");
    let r = wait_for(pod_support::WAIT, || {
        let f = mode_file.clone();
        async move { std::fs::read_to_string(&f).ok().filter(|s| s == "one") }
    })
    .await;
    assert!(r.is_ok(), "{mode_file:?}: {r:?}\n{}", env.agent_log());
    let blob_file = Env::in_guest(&env, &created, "/opt/blob/nested/data.bin");
    assert_eq!(
        std::fs::read(&blob_file).expect("blob"),
        blob,
        "1 MiB round-trip"
    );
    // The ConfigMap changes with `kubectl apply`; the guest sees it within 90 s.
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: {}\ndata:\n  mode: two\n",
        env.ns
    );
    let path = env.guest_dir.with_file_name("app.yaml");
    std::fs::write(&path, manifest).unwrap();
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(env.cp.kubeconfig_path())
        .arg("apply")
        .arg("-f")
        .arg(&path)
        .output()
        .await
        .expect("kubectl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = wait_for(Duration::from_secs(90), || {
        let f = mode_file.clone();
        async move { std::fs::read_to_string(&f).ok().filter(|s| s == "two") }
    })
    .await;
    assert!(
        r.is_ok(),
        "the ConfigMap update never reached the guest\n{}",
        env.agent_log()
    );
    // The token is replaced before it expires (refresh capped at 5 s here), and the new one
    // authenticates against the API server.
    let token_file = Env::in_guest(&env, &created, "/var/run/secrets/tokens/token");
    let first = std::fs::read_to_string(&token_file).expect("token");
    let r = wait_for(Duration::from_secs(60), || {
        let f = token_file.clone();
        let first = first.clone();
        async move {
            std::fs::read_to_string(&f)
                .ok()
                .filter(|t| !t.is_empty() && *t != first)
        }
    })
    .await;
    let second =
        r.unwrap_or_else(|e| panic!("the token was never refreshed: {e}\n{}", env.agent_log()));
    let kubeconfig = env.guest_dir.with_file_name("token.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"{}\", certificate-authority: \"{}\"}}}}]\nusers: [{{name: u, user: {{token: \"{}\"}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n",
            env.cp.server_url(),
            env.cp.ca_cert_path().display(),
            second.trim()
        ),
    )
    .unwrap();
    let client = env.cp.client_for(&kubeconfig).await;
    let ssar: Api<SelfSubjectAccessReview> = Api::all(client);
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some("get".into()),
                resource: Some("pods".into()),
                namespace: Some(env.ns.clone()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = ssar.create(&PostParams::default(), &review).await;
    assert!(
        answer.is_ok(),
        "the refreshed token does not authenticate: {answer:?}"
    );
    let _ = created.name_any();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_traversing_item_is_refused_and_the_agent_keeps_running() {
    let mut env = Env::new("guest-bad", guest_knobs(), &[]).await;
    env.start_agent();
    let mut pod = env.pod("escape");
    pod.spec.as_mut().unwrap().volumes = Some(vec![Volume {
        name: "s".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some("any".into()),
            items: Some(vec![KeyToPath {
                key: "k".into(),
                path: "../../etc/passwd".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }]);
    // The API server refuses it first; the agent's own check is covered by its unit tests.
    let err = env.pods().create(&PostParams::default(), &pod).await;
    assert!(
        matches!(&err, Err(kube::Error::Api(s)) if s.code == 422 && s.message.contains("..")),
        "{err:?}"
    );
    // A Pod with a NUL in an env value is refused by the agent, which keeps running.
    let secrets: Api<Secret> = Api::namespaced(env.admin.clone(), &env.ns);
    secrets
        .create(&PostParams::default(), &secret("nul", &[("v", b"a\0b")]))
        .await
        .expect("secret");
    let mut pod = env.pod("nul");
    pod.spec.as_mut().unwrap().containers[0].env = Some(vec![env_secret("V", "nul", "v", false)]);
    env.create(&pod).await;
    let p = env
        .wait_pod("nul", "CreateContainerConfigError", |p| {
            waiting_reason(p).as_deref() == Some("CreateContainerConfigError")
        })
        .await;
    assert!(format!("{:?}", p.status).contains("NUL"));
    let ok = env.pod("after");
    env.create(&ok).await;
    env.wait_pod("after", "running", |p| phase(p) == "Running")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pod_ends_with_the_jobs_exit_code_and_termination_message() {
    jobs_exit_code_and_message(GuestImage::Baked).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_on_a_guest_agent_only_image_ends_with_the_jobs_exit_code_and_message() {
    jobs_exit_code_and_message(GuestImage::AgentOnly).await;
}

/// On an image of kind `image`, the Pod ends with the job's exit code and termination message.
async fn jobs_exit_code_and_message(image: GuestImage) {
    let mut env = Env::new("guest-exit", image_knobs(image), &[]).await;
    env.start_agent();
    let mut pod = env.pod("job");
    {
        let spec = pod.spec.as_mut().unwrap();
        spec.restart_policy = Some("Never".into());
        let c = &mut spec.containers[0];
        c.termination_message_path = Some("/tmp/job-result".into());
        c.command = Some(vec![
            "/bin/sh".into(),
            "-c".into(),
            "mkdir -p \"$TART_GUEST_ROOT/tmp\"; printf 'tests failed: 2 of 9' > \"$TART_GUEST_ROOT/tmp/job-result\"; exit 3".into(),
        ]);
    }
    let mut fallback = env.pod("job-logs");
    {
        let spec = fallback.spec.as_mut().unwrap();
        spec.restart_policy = Some("Never".into());
        let c = &mut spec.containers[0];
        c.termination_message_policy = Some("FallbackToLogsOnError".into());
        c.command = Some(vec![
            "/bin/sh".into(),
            "-c".into(),
            "echo compiling; echo 'error: linker failed' >&2; exit 1".into(),
        ]);
    }
    env.create(&pod).await;
    env.create(&fallback).await;
    let p = env
        .wait_pod("job", "failed", |p| phase(p) == "Failed")
        .await;
    let t = terminated(&p).expect("terminated state");
    assert_eq!(t.exit_code, 3, "the job's code, not tart run's 0");
    assert_eq!(t.reason.as_deref(), Some("Error"));
    assert_eq!(t.message.as_deref(), Some("tests failed: 2 of 9"));
    let p = env
        .wait_pod("job-logs", "failed", |p| phase(p) == "Failed")
        .await;
    let t = terminated(&p).expect("terminated state");
    assert_eq!(t.exit_code, 1);
    assert_eq!(t.message.as_deref(), Some("error: linker failed\n"));
}
