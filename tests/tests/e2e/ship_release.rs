//! scripts/release: the tarball's layout, its checksum file, and the rendered Homebrew formula
//! held against both — the formula's `install` block, read by a strict parser of the few
//! Homebrew calls it may use, moves every file of the tarball exactly once (Homebrew's
//! `install` moves, so a second install of the same file fails on the Mac) — and the `.pkg`
//! recipe's staged payload carrying the same files plus its uninstaller.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A release made into a temp dir with a stand-in binary.
struct Release {
    dir: tempfile::TempDir,
    version: String,
}

/// Runs `cmd`; fails the test with its output unless it succeeded.
fn succeed(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

const BASE_URL: &str = "https://example.invalid/acme/tart-kubelet/releases/download/v9";

impl Release {
    fn make() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("stand-in");
        std::fs::write(&bin, "not really a Mach-O\n").unwrap();
        succeed(
            Command::new("bash")
                .arg(repo().join("scripts/release"))
                .args(["--binary", bin.to_str().unwrap(), "--out"])
                .arg(dir.path().join("dist"))
                .args(["--base-url", BASE_URL])
                .env_remove("RELEASE_BASE_URL"),
        );
        let cargo = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
        let version = cargo
            .lines()
            .find_map(|l| l.strip_prefix("version = \""))
            .and_then(|v| v.strip_suffix('"'))
            .unwrap()
            .to_owned();
        Release { dir, version }
    }

    fn dist(&self, name: &str) -> PathBuf {
        self.dir.path().join("dist").join(name)
    }

    fn tarball_name(&self) -> String {
        format!("tart-kubelet-{}-darwin-arm64.tar.gz", self.version)
    }

    /// The tarball's files (not directories), relative to its one top directory.
    fn files(&self) -> BTreeSet<String> {
        let out = succeed(
            Command::new("tar")
                .arg("-tzf")
                .arg(self.dist(&self.tarball_name())),
        );
        let top = format!("tart-kubelet-{}-darwin-arm64/", self.version);
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                l.strip_prefix(&top)
                    .unwrap_or_else(|| panic!("{l} outside {top}"))
                    .to_owned()
            })
            .filter(|l| !l.is_empty() && !l.ends_with('/'))
            .collect()
    }
}

// === the formula's install block ===

/// One `install` argument: a tarball path (file or directory) and where it lands.
#[derive(Debug)]
struct Move {
    src: String,
    dest: String,
}

/// Homebrew's install locations the formula may use, as paths under a prefix.
fn location(name: &str) -> Option<&'static str> {
    Some(match name {
        "bin" => "bin",
        "etc" => "etc",
        "pkgshare" => "share/tart-kubelet",
        "var" => "var",
        _ => return None,
    })
}

/// `bin` or `(etc/"tart-kubelet")`.
fn target(t: &str) -> Result<String, String> {
    if let Some(inner) = t.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        let (base, sub) = inner.split_once('/').ok_or_else(|| format!("target {t}"))?;
        let base = location(base).ok_or_else(|| format!("location {base}"))?;
        return Ok(format!("{base}/{}", quoted(sub)?));
    }
    location(t)
        .map(str::to_owned)
        .ok_or_else(|| format!("location {t}"))
}

fn quoted(s: &str) -> Result<String, String> {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .filter(|s| !s.contains('"') && !s.contains("#{"))
        .map(str::to_owned)
        .ok_or_else(|| format!("not a plain string: {s}"))
}

/// The moves of the `install` method, in order. Any line that is not a comment, a
/// `<target>.install "a", "b" => "c"` or a `<target>.mkpath` is an error: what this parser
/// does not understand, it cannot vouch for.
fn install_moves(formula: &str) -> Result<Vec<Move>, String> {
    let start = formula
        .find("\n  def install\n")
        .ok_or("no `def install`")?;
    let body = &formula[start + "\n  def install\n".len()..];
    let body = &body[..body.find("\n  end\n").ok_or("no end of `def install`")?];
    let mut moves = vec![];
    for line in body.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(t) = line.strip_suffix(".mkpath") {
            target(t)?;
            continue;
        }
        let (t, args) = line
            .split_once(".install ")
            .ok_or_else(|| format!("unsupported line: {line}"))?;
        let dir = target(t)?;
        for arg in args.split(',') {
            let (src, dest) = match arg.split_once("=>") {
                Some((s, d)) => (quoted(s)?, quoted(d)?),
                None => {
                    let s = quoted(arg)?;
                    let base = s.rsplit('/').next().unwrap_or(&s).to_owned();
                    (s, base)
                }
            };
            moves.push(Move {
                src,
                dest: format!("{dir}/{dest}"),
            });
        }
    }
    Ok(moves)
}

/// Plays the moves against the tarball's files: each moves a file or a directory that is
/// still there; at the end nothing is left. Returns each file's destination.
fn play(files: &BTreeSet<String>, moves: &[Move]) -> Result<BTreeMap<String, String>, String> {
    let mut left = files.clone();
    let mut placed = BTreeMap::new();
    for m in moves {
        let under = |f: &String| *f == m.src || f.starts_with(&format!("{}/", m.src));
        let taken: Vec<String> = left.iter().filter(|f| under(f)).cloned().collect();
        if taken.is_empty() {
            return Err(if files.iter().any(under) {
                format!("{} is installed twice", m.src)
            } else {
                format!("{} is not in the tarball", m.src)
            });
        }
        for f in taken {
            left.remove(&f);
            let dest = format!("{}{}", m.dest, &f[m.src.len()..]);
            placed.insert(f, dest);
        }
    }
    if !left.is_empty() {
        return Err(format!("not installed: {left:?}"));
    }
    Ok(placed)
}

fn formula_value(formula: &str, key: &str) -> String {
    let prefix = format!("  {key} \"");
    formula
        .lines()
        .find_map(|l| l.strip_prefix(&prefix)?.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no {key}"))
        .to_owned()
}

#[test]
fn release_formula_installs_every_file_of_the_tarball_once_with_its_checksum() {
    let r = Release::make();
    let files = r.files();
    for f in [
        "tart-kubelet",
        "config.example.toml",
        "guest/tart-guest-launcher",
        "guest/dev.tart-kubelet.guest-launcher.plist",
        "kubernetes/rbac.yaml",
        "launchd/tart-kubelet.daemon.plist",
        "monitoring/alerts.yaml",
        "monitoring/grafana/tart-kubelet.json",
    ] {
        assert!(files.contains(f), "tarball lacks {f}: {files:?}");
    }

    // The checksum file is `sha256sum`'s format for the tarball, and right.
    let sums = std::fs::read_to_string(r.dist(&format!("{}.sha256", r.tarball_name()))).unwrap();
    let (sum, name) = sums.trim_end().split_once("  ").unwrap();
    assert_eq!(name, r.tarball_name());
    succeed(
        Command::new("sha256sum")
            .args(["--check", "--strict"])
            .arg(format!("{}.sha256", r.tarball_name()))
            .current_dir(r.dir.path().join("dist")),
    );

    let formula = std::fs::read_to_string(r.dist("tart-kubelet.rb")).unwrap();
    assert_eq!(formula_value(&formula, "sha256"), sum);
    assert_eq!(
        formula_value(&formula, "url"),
        format!("{BASE_URL}/{}", r.tarball_name())
    );
    assert_eq!(formula_value(&formula, "version"), r.version);

    let placed = play(&files, &install_moves(&formula).unwrap()).unwrap();
    assert_eq!(placed["tart-kubelet"], "bin/tart-kubelet");
    assert_eq!(
        placed["config.example.toml"],
        "etc/tart-kubelet/config.toml"
    );
    assert_eq!(
        placed["kubernetes/rbac.yaml"],
        "share/tart-kubelet/kubernetes/rbac.yaml"
    );
    let dests: BTreeSet<_> = placed.values().collect();
    assert_eq!(dests.len(), placed.len(), "two files land on one path");
}

#[test]
fn the_formula_check_catches_a_file_installed_twice_or_not_at_all() {
    let files: BTreeSet<String> = ["tart-kubelet", "config.example.toml", "launchd/a.plist"]
        .map(String::from)
        .into();
    let block = |lines: &str| format!("x\n  def install\n{lines}\n  end\n");
    // The install block this formula had: it moved the example config, then installed it again.
    let twice = block(
        r#"    bin.install "tart-kubelet"
    (etc/"tart-kubelet").install "config.example.toml" => "config.toml"
    pkgshare.install "config.example.toml", "launchd""#,
    );
    let err = play(&files, &install_moves(&twice).unwrap()).unwrap_err();
    assert_eq!(err, "config.example.toml is installed twice");

    let missing = block(r#"    bin.install "tart-kubelet", "config.example.toml""#);
    let err = play(&files, &install_moves(&missing).unwrap()).unwrap_err();
    assert!(err.starts_with("not installed: ") && err.contains("launchd/a.plist"));

    let absent = block(r#"    pkgshare.install "rbac.yaml""#);
    let err = play(&files, &install_moves(&absent).unwrap()).unwrap_err();
    assert_eq!(err, "rbac.yaml is not in the tarball");

    let unknown = block(r#"    system "cp", "x", "y""#);
    assert!(
        install_moves(&unknown)
            .unwrap_err()
            .starts_with("unsupported line")
    );
}

#[test]
fn release_refuses_a_missing_binary_and_a_bad_base_url() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new("bash")
            .arg(repo().join("scripts/release"))
            .args(args)
            .arg("--out")
            .arg(dir.path())
            .output()
            .unwrap()
    };
    let out = run(&["--binary", "/nonexistent/tart-kubelet"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a file"));
    let bin = dir.path().join("b");
    std::fs::write(&bin, "x").unwrap();
    let out = run(&[
        "--binary",
        bin.to_str().unwrap(),
        "--base-url",
        "http://insecure/x",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be https://"));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "wrote something"
    );
}

/// The pkg recipe's payload (its staging step runs off macOS too): every tarball file exactly
/// once, where build.sh's header says, plus the uninstaller.
#[test]
fn pkg_payload_carries_every_tarball_file_once_and_the_uninstaller() {
    let r = Release::make();
    let root = r.dir.path().join("root");
    succeed(
        Command::new("bash")
            .arg(repo().join("packaging/pkg/build.sh"))
            .arg("--stage-only")
            .arg(&root)
            .arg(r.dist(&r.tarball_name())),
    );
    let mut staged = BTreeSet::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                staged.insert(p.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    let mut want: BTreeSet<String> = r
        .files()
        .into_iter()
        .map(|f| match f.as_str() {
            "tart-kubelet" => "usr/local/bin/tart-kubelet".to_owned(),
            "config.example.toml" => "usr/local/etc/tart-kubelet/config.toml.new".to_owned(),
            _ => format!("usr/local/share/tart-kubelet/{f}"),
        })
        .collect();
    want.insert("usr/local/bin/tart-kubelet-uninstall".into());
    assert_eq!(staged, want);
    assert_eq!(
        std::fs::read(root.join("usr/local/bin/tart-kubelet-uninstall")).unwrap(),
        std::fs::read(repo().join("packaging/pkg/uninstall")).unwrap()
    );
}
