//! `fuzz`: runs the fuzz targets for a time each and prints their figures (docs/testing.md,
//! "Fuzzing"). Findings are written under `--findings`; a run with any exits 1.

use std::{path::PathBuf, process::ExitCode, time::Duration};

use clap::Parser;
use tart_kubelet_fuzz::{Plan, Report, alloc, corpus, run, targets};

/// Fuzz the parsers of network and guest bytes on stable Rust.
#[derive(Parser)]
struct Args {
    /// Seconds of mutated inputs per target.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Mutated inputs per target, at most.
    #[arg(long, default_value_t = u64::MAX)]
    inputs: u64,
    /// The PRNG's seed (a run is reproduced from it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Milliseconds one input may take before it counts as a hang.
    #[arg(long, default_value_t = 2000)]
    per_input_ms: u64,
    /// The longest mutated input, in bytes.
    #[arg(long, default_value_t = 4096)]
    max_len: usize,
    /// Where the inputs of findings are written.
    #[arg(long, default_value = "fuzz-findings")]
    findings: PathBuf,
    /// List the targets and exit.
    #[arg(long)]
    list: bool,
    /// Targets to run (all when none is named).
    names: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let all = targets();
    if args.list {
        for t in &all {
            println!("{}", t.name);
        }
        return ExitCode::SUCCESS;
    }
    if let Some(unknown) = args.names.iter().find(|n| all.iter().all(|t| t.name != *n)) {
        eprintln!("no target {unknown:?} (--list names them)");
        return ExitCode::FAILURE;
    }
    let plan = Plan {
        seed: args.seed,
        inputs: args.inputs,
        time: Duration::from_secs(args.seconds),
        per_input: Duration::from_millis(args.per_input_ms),
        max_len: args.max_len,
        keep: 5,
    };
    println!(
        "{:<18} {:>10} {:>7} {:>7} {:>5} {:>6} {:>11} {:>9} {:>7}",
        "target", "inputs", "corpus", "crashes", "hangs", "memory", "peak alloc", "slowest", "time"
    );
    let mut clean = true;
    for t in all
        .iter()
        .filter(|t| args.names.is_empty() || args.names.iter().any(|n| n == t.name))
    {
        let committed = match corpus::load(&corpus::committed_dir(), t.name) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{}: cannot read the corpus: {e}", t.name);
                return ExitCode::FAILURE;
            }
        };
        let r = run(t, &committed, &plan);
        print_row(&r);
        for f in &r.findings {
            let at = corpus::write(&args.findings, t.name, f)
                .map_or_else(|e| format!("not written: {e}"), |p| p.display().to_string());
            println!("  {} {}: {} ({at})", t.name, f.kind.as_str(), f.message);
        }
        clean &= r.clean();
    }
    println!("peak RSS {} MiB", alloc::max_rss_bytes() >> 20);
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn print_row(r: &Report) {
    let [crashes, hangs, memory] = r.counts;
    println!(
        "{:<18} {:>10} {:>7} {:>7} {:>5} {:>6} {:>8} KiB {:>7}ms {:>6}s",
        r.target,
        r.inputs,
        r.corpus,
        crashes,
        hangs,
        memory,
        r.peak_alloc >> 10,
        r.slowest.as_millis(),
        r.elapsed.as_secs()
    );
}
