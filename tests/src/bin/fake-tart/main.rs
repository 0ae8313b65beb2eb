//! `fake-tart`: a stand-in for the Tart CLI on Linux, written from docs/reference/tart-cli.md (see
//! `docs/fake-tart.md`). It keeps the same `$TART_HOME` layout, locks, output texts and exit
//! codes, and reads failure knobs from `$TART_HOME/fake-tart/knobs.json` on every invocation.
//!
//! This file owns dispatch: argv -> subcommand, knob rules, tmp GC, exit code. The commands
//! live in the modules beside this file.

mod autoprune;
mod cli;
mod dirs;
mod endpoints;
mod error;
mod guest;
mod guest_attack;
mod guest_exec;
mod guest_launchd;
mod guest_mode;
mod guest_tools;
mod home;
mod info;
mod locks;
mod maint;
mod net;
mod pull;
mod registry;
mod rules;
mod time;
mod vm;

// The knob schema and the registry's pull bookkeeping are the library's, shared with the tests
// that write the knobs.
use tart_kubelet_tests::fake::{bandwidth, knobs};

use std::io::Write;
use std::time::Duration;

use error::Failure;
use home::Home;
use knobs::{Action, DEFAULT_VERSION, Knobs};

/// What every command gets: the storage root, this invocation's knobs, and whether `CI` is set.
pub struct Ctx {
    pub home: Home,
    pub knobs: Knobs,
    pub ci: bool,
}

impl Ctx {
    /// The version this fake pretends to be.
    pub fn version(&self) -> String {
        self.knobs
            .version
            .clone()
            .unwrap_or_else(|| DEFAULT_VERSION.to_string())
    }
}

/// A random UUID in Foundation's uppercase form, for `tmp/<UUID>` working directories.
pub fn uuid() -> String {
    let b: [u8; 16] = rand::random();
    let h: String = b.iter().map(|x| format!("{x:02X}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

const ROOT_HELP: &str = "OVERVIEW: fake-tart, a Linux stand-in for the Tart CLI (tests only)

USAGE: tart <subcommand>

OPTIONS:
  --version               Show the version.
  -h, --help              Show help information.

SUBCOMMANDS:
  clone, delete, exec, get, ip, list, prune, pull, run, set, stop, suspend
";

/// Restores the default SIGPIPE action (Rust ignores it), so `fake-tart list | head` ends
/// quietly like a Swift program instead of panicking on EPIPE.
#[allow(unsafe_code)]
fn default_sigpipe() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: called first thing in main, before any thread exists; installing SIG_DFL runs
    // no Rust code in signal context.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

fn main() {
    default_sigpipe();
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::exit(1);
        }
    };
    let code = match rt.block_on(dispatch(args)) {
        Ok(()) => 0,
        Err(failure) => {
            if !matches!(failure, Failure::Exit(_)) {
                eprintln!("{failure}");
            }
            failure.exit_code()
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

/// The VM (or image) names a rule's `vm` glob is matched against.
fn rule_names<'a>(sub: &str, p: &'a cli::Parsed) -> Vec<&'a str> {
    match sub {
        "exec" => p.positionals.iter().take(1).map(String::as_str).collect(),
        _ => p.positionals.iter().map(String::as_str).collect(),
    }
}

/// Internal subcommand of the `hang_with_child` helper (not a Tart command).
const HOLD: &str = "__fake-tart-hold";

async fn dispatch(args: Vec<String>) -> Result<(), Failure> {
    let Some(sub) = args.first().cloned() else {
        print!("{ROOT_HELP}");
        return Ok(());
    };
    if sub == HOLD {
        // The helper: hold the inherited pipes until killed (or the home is gone).
        watch_home(&Home::from_env()?);
        std::future::pending::<()>().await;
    }
    let rest = &args[1..];
    if sub == guest_tools::GUEST_TOOL {
        return guest_tools::run(rest);
    }
    if sub == "--help" || sub == "-h" || sub == "help" {
        print!("{ROOT_HELP}");
        return Ok(());
    }
    if sub == "--version" {
        let home = Home::from_env()?;
        watch_home(&home);
        let knobs = rules::load(&home)?;
        apply_generic(rules::take(&home, &knobs, "version", &[])?).await?;
        println!("{}", knobs.version.as_deref().unwrap_or(DEFAULT_VERSION));
        return Ok(());
    }
    let Some(spec) = cli::spec(&sub) else {
        return Err(Failure::validation(format!("Unexpected argument '{sub}'")));
    };
    if cli::wants_help(spec, rest) {
        println!("USAGE: {}", spec.usage);
        return Ok(());
    }
    let parsed = cli::parse(spec, rest)?;
    let home = Home::from_env()?;
    watch_home(&home);
    let knobs = rules::load(&home)?;
    let action = rules::take(&home, &knobs, &sub, &rule_names(&sub, &parsed))?;
    let action = apply_generic(action).await?;
    // Tmp GC before every command except pull and clone (docs/reference/tart-cli.md §1.5).
    if sub != "pull"
        && sub != "clone"
        && let Err(e) = locks::gc_tmp(&home.tmp())
    {
        eprintln!("Failed to perform garbage collection: {e}");
    }
    let ctx = Ctx {
        home,
        knobs,
        ci: std::env::var_os("CI").is_some(),
    };
    match sub.as_str() {
        "pull" => pull::pull(&ctx, &parsed, action).await,
        "clone" => pull::clone(&ctx, &parsed, action).await,
        "set" => maint::set(&ctx, &parsed).await,
        "get" => info::get(&ctx, &parsed),
        "list" => info::list(&ctx, &parsed),
        "delete" => maint::delete(&ctx, &parsed),
        "prune" => maint::prune(&ctx, &parsed),
        "run" => vm::run(&ctx, &parsed, action, &args).await,
        "stop" => vm::stop(&ctx, &parsed).await,
        "suspend" => vm::suspend(&ctx, &parsed),
        "ip" => guest::ip(&ctx, &parsed).await,
        "exec" => guest::exec(&ctx, &parsed).await,
        other => Err(Failure::validation(format!(
            "Unexpected argument '{other}'"
        ))),
    }
}

/// Test hygiene, not Tart behaviour: once `TART_HOME` is deleted (its test is over), any
/// fake-tart still hanging, waiting on a lock or running a VM there exits 137 within 250 ms
/// instead of leaking.
fn watch_home(home: &Home) {
    let root = home.root.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            if !root.exists() {
                std::process::exit(137);
            }
        }
    });
}

/// Applies the actions that mean the same for every command; returns the op-specific rest.
async fn apply_generic(action: Option<Action>) -> Result<Option<Action>, Failure> {
    match action {
        Some(Action::Hang(true)) => {
            let _ = std::io::stdout().flush();
            // Blocks until a signal with a default action (SIGINT, SIGTERM, SIGKILL) ends us,
            // or the home-watch task sees TART_HOME gone.
            std::future::pending::<()>().await;
            unreachable!("pending never completes")
        }
        Some(Action::HangWithChild(true)) => {
            let _ = std::io::stdout().flush();
            // Inherits our process group, environment (TART_HOME) and stdio.
            let exe = std::env::current_exe().map_err(|e| Failure::other(e.to_string()))?;
            let _helper = tokio::process::Command::new(exe)
                .arg(HOLD)
                .spawn()
                .map_err(|e| Failure::other(e.to_string()))?;
            std::future::pending::<()>().await;
            unreachable!("pending never completes")
        }
        Some(Action::Fail(f)) => {
            eprintln!("{}", f.stderr);
            Err(Failure::Exit(f.code))
        }
        Some(Action::DelayMs(ms)) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(None)
        }
        Some(Action::InvalidUtf8(true)) => {
            let bytes = b"\xff\xfe invalid utf-8 \xc3\x28\n";
            let _ = std::io::stdout().write_all(bytes);
            let _ = std::io::stdout().flush();
            let _ = std::io::stderr().write_all(bytes);
            Ok(None)
        }
        other => Ok(other),
    }
}
