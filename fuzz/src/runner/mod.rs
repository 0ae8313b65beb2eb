//! One target's run: the seeds and the committed corpus, then mutated inputs until the plan's
//! count or time is spent. Each input runs on the target's worker thread; the driver waits
//! at most the per-input limit for it (longer is a hang: the worker is abandoned and the
//! target's run ends), catches a panic (a crash; the worker goes on) and reads the most the
//! input had allocated at once (past the target's bound is a memory finding).

use std::{
    any::Any,
    cell::RefCell,
    panic::{self, AssertUnwindSafe},
    sync::{
        Once,
        mpsc::{self, Receiver, SyncSender},
    },
    thread,
    time::{Duration, Instant},
};

use crate::{
    Target, alloc,
    mutate::{self, Pool},
    rng::Rng,
};

/// How long and how hard to run one target.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The PRNG's seed.
    pub seed: u64,
    /// Mutated inputs to run after the corpus (at most).
    pub inputs: u64,
    /// Time for mutated inputs (at most).
    pub time: Duration,
    /// Longer than this on one input is a hang.
    pub per_input: Duration,
    /// The longest mutated input.
    pub max_len: usize,
    /// Findings kept per kind (the rest are counted).
    pub keep: usize,
}

/// What a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindingKind {
    /// The target panicked: a parser panic or a broken invariant.
    Crash,
    /// One input ran past the per-input limit.
    Hang,
    /// One input had more allocated at once than the target's bound.
    Memory,
}

impl FindingKind {
    /// The word in reports and file names.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Crash => "crash",
            Self::Hang => "hang",
            Self::Memory => "memory",
        }
    }
}

/// One finding and the input that shows it.
#[derive(Debug, Clone)]
pub struct Finding {
    /// What it is.
    pub kind: FindingKind,
    /// The panic's place and message, the time, or the bytes allocated.
    pub message: String,
    pub input: Vec<u8>,
}

/// One target's figures.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: &'static str,
    /// Inputs run (corpus and mutated).
    pub inputs: u64,
    /// Of which from the seeds and the committed corpus.
    pub corpus: u64,
    /// Findings by kind: crashes, hangs, memory.
    pub counts: [u64; 3],
    /// The first findings of each kind.
    pub findings: Vec<Finding>,
    /// The most one input had allocated at once.
    pub peak_alloc: usize,
    /// The slowest input.
    pub slowest: Duration,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Report {
    /// No crash, hang or memory finding.
    pub fn clean(&self) -> bool {
        self.counts == [0; 3]
    }
}

/// What the worker says about one input: the most it had allocated at once, and the panic's
/// place and message if it panicked.
struct Outcome {
    peak: usize,
    panic: Option<String>,
}

/// The thread that runs a target's inputs.
struct Worker {
    tx: SyncSender<Vec<u8>>,
    rx: Receiver<Outcome>,
}

const WORKER: &str = "fuzz-worker";

thread_local! {
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

impl Worker {
    fn start(run: fn(&[u8])) -> Self {
        quiet_worker_panics();
        let (tx, inputs) = mpsc::sync_channel::<Vec<u8>>(1);
        let (outcomes, rx) = mpsc::sync_channel(1);
        let spawned = thread::Builder::new().name(WORKER.into()).spawn(move || {
            for input in inputs {
                let base = alloc::start();
                let r = panic::catch_unwind(AssertUnwindSafe(|| run(&input)));
                let o = Outcome {
                    peak: alloc::peak_since(base),
                    panic: r
                        .err()
                        .map(|payload| LAST_PANIC.with(|l| l.take()) + &text(&payload)),
                };
                if outcomes.send(o).is_err() {
                    return;
                }
            }
        });
        if let Err(e) = spawned {
            panic!("cannot start a fuzz worker: {e}");
        }
        Self { tx, rx }
    }

    /// Runs `input`; `None` when it did not end within `limit`.
    fn run(&self, input: Vec<u8>, limit: Duration) -> Option<Outcome> {
        self.tx.send(input).ok()?;
        self.rx.recv_timeout(limit).ok()
    }
}

fn text(payload: &Box<dyn Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Panics on worker threads are findings, reported with the input: the hook keeps their place
/// for the report instead of printing it. Other threads' panics print as before.
fn quiet_worker_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if thread::current().name() == Some(WORKER) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}: ", l.file(), l.line()))
                    .unwrap_or_default();
                LAST_PANIC.with(|l| *l.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `target` over `corpus` (the seeds come first, then these) and mutated inputs.
pub fn run(target: &Target, corpus: &[Vec<u8>], plan: &Plan) -> Report {
    let started = Instant::now();
    let mut inputs: Vec<Vec<u8>> = (target.seeds)();
    inputs.extend_from_slice(corpus);
    let mut report = Report {
        target: target.name,
        inputs: 0,
        corpus: 0,
        counts: [0; 3],
        findings: Vec::new(),
        peak_alloc: 0,
        slowest: Duration::ZERO,
        elapsed: Duration::ZERO,
    };
    let worker = Worker::start(target.run);
    let one = |input: &[u8], report: &mut Report| -> bool {
        let t = Instant::now();
        let outcome = worker.run(input.to_vec(), plan.per_input);
        let took = t.elapsed();
        report.inputs += 1;
        report.slowest = report.slowest.max(took);
        let Some(Outcome { peak, panic }) = outcome else {
            return found(
                report,
                plan,
                FindingKind::Hang,
                format!("no end within {took:?}"),
                input,
            );
        };
        report.peak_alloc = report.peak_alloc.max(peak);
        if let Some(message) = panic {
            found(report, plan, FindingKind::Crash, message, input)
        } else if peak > target.max_alloc {
            let bound = target.max_alloc;
            let message = format!("{peak} bytes allocated at once (bound {bound})");
            found(report, plan, FindingKind::Memory, message, input)
        } else {
            true
        }
    };
    for input in &inputs {
        report.corpus += 1;
        if !one(input, &mut report) {
            report.elapsed = started.elapsed();
            return report;
        }
    }
    if inputs.is_empty() {
        inputs.push(Vec::new());
    }
    let mut rng = Rng::new(plan.seed);
    let pool = Pool {
        inputs: &inputs,
        tokens: target.tokens,
        max_len: plan.max_len,
    };
    let mut recent: Vec<Vec<u8>> = Vec::new();
    let mutating = Instant::now();
    for n in 0..plan.inputs {
        if mutating.elapsed() >= plan.time {
            break;
        }
        // Mostly from the corpus; now and then from a recent mutant, to go deeper.
        let base = if !recent.is_empty() && rng.one_in(3) {
            &recent[rng.below(recent.len())]
        } else {
            &inputs[rng.below(inputs.len())]
        };
        let m = mutate::mutate(&mut rng, base, &pool);
        if !one(&m, &mut report) {
            break;
        }
        if recent.len() < 64 {
            recent.push(m);
        } else {
            let i = usize::try_from(n % 64).unwrap_or(0);
            recent[i] = m;
        }
    }
    report.elapsed = started.elapsed();
    report
}

/// Counts a finding of `kind` on `input` (keeping the plan's first few of each kind); whether
/// the target's run goes on: a hung worker cannot be stopped, so the run ends with it.
fn found(
    report: &mut Report,
    plan: &Plan,
    kind: FindingKind,
    message: String,
    input: &[u8],
) -> bool {
    report.counts[kind as usize] += 1;
    if report.findings.iter().filter(|f| f.kind == kind).count() < plan.keep {
        report.findings.push(Finding {
            kind,
            message,
            input: input.to_vec(),
        });
    }
    kind != FindingKind::Hang
}

#[cfg(test)]
mod tests;
