use super::*;

const PRINT_RUNNING: &str = "system/dev.tart-kubelet.agent = {
\tactive count = 1
\tpath = /Library/LaunchDaemons/dev.tart-kubelet.agent.plist
\ttype = LaunchDaemon
\tstate = running

\tprogram = /opt/homebrew/bin/tart-kubelet
\targuments = {
\t\t/opt/homebrew/bin/tart-kubelet
\t\t--config
\t\t/opt/homebrew/etc/tart-kubelet/config.toml
\t}

\tenvironment = {
\t\tPATH => /opt/homebrew/bin:/usr/bin
\t\tpid = 99
\t}

\tdomain = system
\tusername = admin
\truns = 3
\tpid = 4242
\timmediate reason = speculative
\tforks = 0
\texecs = 1
\tlast exit code = 1
}
";

#[test]
fn print_of_a_running_job_yields_state_pid_and_last_exit() {
    let st = parse_print(PRINT_RUNNING);
    assert_eq!(st.state.as_deref(), Some("running"));
    assert_eq!(st.pid, Some(4242));
    assert_eq!(st.last_exit_code, Some(1));
}

#[test]
fn print_of_a_waiting_job_has_no_pid() {
    let t = "system/x = {\n\tstate = waiting\n\tlast exit code = (never exited)\n}\n";
    let st = parse_print(t);
    assert_eq!(st.state.as_deref(), Some("waiting"));
    assert_eq!(st.pid, None);
    assert_eq!(st.last_exit_code, None);
}

#[test]
fn install_waits_for_the_old_job_to_be_gone_before_bootstrap() {
    let steps = install_plan(&InstallPlanInput {
        domain: Domain::System,
        label: "l".into(),
        plist_path: "/Library/LaunchDaemons/l.plist".into(),
        plist: "<plist/>".into(),
        log_dir: "/Users/a/Library/Logs/tart-kubelet".into(),
        user: "a".into(),
        wait: Duration::from_secs(60),
    });
    let pos = |f: &dyn Fn(&Step) -> bool| steps.iter().position(f).unwrap();
    let bootout = pos(&|s| matches!(s, Step::BootoutIfLoaded { .. }));
    let gone = pos(&|s| matches!(s, Step::WaitGone { .. }));
    let boot = pos(&|s| matches!(s, Step::Bootstrap { .. }));
    let write = pos(&|s| matches!(s, Step::WriteFile { .. }));
    assert!(write < bootout && bootout < gone && gone < boot);
    assert_eq!(
        steps[boot],
        Step::Bootstrap {
            domain: "system".into(),
            plist: "/Library/LaunchDaemons/l.plist".into()
        }
    );
}

#[test]
fn gui_domain_targets_name_the_uid() {
    assert_eq!(Domain::Gui(501).service("l"), "gui/501/l");
    assert_eq!(Domain::System.target(), "system");
}

#[test]
fn uninstall_plan_renders_every_command() {
    let steps = uninstall_plan(
        &Domain::System,
        "l",
        "/Library/LaunchDaemons/l.plist".into(),
        Duration::from_secs(30),
    );
    assert_eq!(
        render_plan(&steps),
        "1. if `launchctl print system/l` succeeds: launchctl bootout system/l\n\
             2. poll `launchctl print system/l` until it fails (deadline 30 s)\n\
             3. rm -f /Library/LaunchDaemons/l.plist\n"
    );
}
