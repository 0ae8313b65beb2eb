//! docs/configuration.md is kept in step with `--help`: every flag the agent (and each of its
//! `install`, `uninstall`, `doctor` subcommands) accepts is in the reference, and every flag
//! the reference lists exists. Also: the example config file parses with the agent's loader,
//! and the documented precedence (flag > environment > file) holds in the real binary.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Long flags of the options listed by `<agent> <args> --help` (not `--help`/`--version`).
fn help_flags(args: &[&str]) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_agent-under-test"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let opts = &text[text.find("Options:").expect("an Options section")..];
    opts.lines()
        .filter_map(|l| {
            let t = l.trim_start();
            let t = t
                .strip_prefix("-h, ")
                .or(t.strip_prefix("-V, "))
                .unwrap_or(t);
            let flag = t.strip_prefix("--")?.split([' ', '=']).next()?;
            Some(format!("--{flag}"))
        })
        .filter(|f| f != "--help" && f != "--version")
        .collect()
}

/// Flags in the first column of the tables of the doc section starting at `heading`.
fn doc_flags(doc: &str, heading: &str) -> BTreeSet<String> {
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let rest = &doc[start + heading.len()..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    section
        .lines()
        .filter_map(|l| {
            let cell = l.strip_prefix("| `--")?;
            let flag = cell.split(['`', ' ']).next()?;
            Some(format!("--{flag}"))
        })
        .collect()
}

fn assert_same(what: &str, help: &BTreeSet<String>, doc: &BTreeSet<String>) {
    let undocumented: Vec<_> = help.difference(doc).collect();
    let stale: Vec<_> = doc.difference(help).collect();
    assert!(
        undocumented.is_empty() && stale.is_empty(),
        "{what}: flags in --help but not in docs/configuration.md: {undocumented:?}; \
         documented but not in --help: {stale:?}"
    );
}

fn doc() -> String {
    std::fs::read_to_string(repo().join("docs/configuration.md")).unwrap()
}

#[test]
fn agent_options_reference_matches_help() {
    let help = help_flags(&[]);
    assert!(help.len() >= 20, "{help:?}");
    assert_same(
        "agent options",
        &help,
        &doc_flags(&doc(), "## Agent options"),
    );
}

#[test]
fn subcommand_references_match_their_help() {
    let agent = help_flags(&[]);
    for sub in ["install", "uninstall", "doctor"] {
        // install and doctor accept every agent option too; the doc lists only their own.
        let own: BTreeSet<String> = help_flags(&[sub]).difference(&agent).cloned().collect();
        assert!(!own.is_empty(), "{sub} has no options of its own?");
        assert_same(
            sub,
            &own,
            &doc_flags(&doc(), &format!("## `tart-kubelet {sub}`")),
        );
    }
}

#[test]
fn every_documented_environment_variable_is_the_flag_name() {
    let d = doc();
    let section =
        &d[d.find("## Agent options").unwrap()..d.find("## `tart-kubelet install`").unwrap()];
    let mut rows = 0;
    for row in section.lines().filter(|l| l.starts_with("| `--")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let flag = cells[1].trim_matches('`').split(' ').next().unwrap();
        let env = cells[2].trim_matches('`');
        let base = flag
            .trim_start_matches("--")
            .to_uppercase()
            .replace('-', "_");
        // Repeatable flags take a plural variable (--node-label -> TART_KUBELET_NODE_LABELS).
        assert!(
            env == format!("TART_KUBELET_{base}") || env == format!("TART_KUBELET_{base}S"),
            "{flag} documented with {env}"
        );
        rows += 1;
    }
    assert!(rows >= 20);
}

#[test]
fn example_config_file_loads_and_uses_only_documented_keys() {
    // `doctor --offline` loads the file with the agent's own loader; a bad file exits 2
    // ("invalid ..."), a loaded one runs the checks (exit 0 or 1).
    let home = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = doctor_with_example(home.path(), &[], &[]);
    assert_ne!(code, Some(2), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "node mac-mini-01, TART_HOME {}",
            home.path().display()
        )),
        "{stdout}"
    );
    let example = repo().join("packaging/config.example.toml");
    let text = std::fs::read_to_string(&example).unwrap();
    let d = doc();
    let keys: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains(" = "))
        .map(|l| l.split(" = ").next().unwrap().trim())
        .collect();
    assert!(keys.len() >= 15, "{keys:?}");
    for key in keys {
        assert!(
            d.contains(&format!("`{key}`")),
            "example key {key} is not in docs/configuration.md"
        );
    }
}

/// `doctor --offline` with the example file (plus `extra` flags and `env`), as (exit code,
/// stdout, stderr). `--tart-home` (a flag wins over the file) keeps doctor out of /Users.
fn doctor_with_example(
    home: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-under-test"));
    cmd.args(["doctor", "--offline", "--config"])
        .arg(repo().join("packaging/config.example.toml"))
        .arg("--tart-home")
        .arg(home)
        .args(extra)
        .env_remove("TART_KUBELET_NODE_NAME")
        .envs(env.iter().copied());
    let out = cmd.output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.code(), text(out.stdout), text(out.stderr))
}

#[test]
fn flags_beat_the_environment_and_the_environment_beats_the_file() {
    let node = |extra: &[&str], env: &[(&str, &str)]| {
        let home = tempfile::tempdir().unwrap();
        let (_, stdout, stderr) = doctor_with_example(home.path(), extra, env);
        let line = stdout.lines().find(|l| l.contains("TART_HOME"));
        let name = line.and_then(|l| l.split("node ").nth(1)?.split(',').next());
        name.map(str::to_owned)
            .unwrap_or_else(|| panic!("no node line in {stdout}{stderr}"))
    };
    let env = [("TART_KUBELET_NODE_NAME", "from-env")];
    assert_eq!(node(&[], &[]), "mac-mini-01");
    assert_eq!(node(&[], &env), "from-env");
    assert_eq!(node(&["--node-name", "from-flag"], &env), "from-flag");
}

#[test]
fn a_bad_environment_value_stops_with_the_setting_named() {
    let env = [("TART_KUBELET_LEASE_DURATION", "forever")];
    let home = tempfile::tempdir().unwrap();
    let (code, _, stderr) = doctor_with_example(home.path(), &[], &env);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--lease-duration") && stderr.contains("not a duration"),
        "{stderr}"
    );
}
