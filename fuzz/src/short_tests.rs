//! The short fuzz run in CI: every target over its seeds, the committed corpus and a bounded
//! number of mutated inputs, with no crash, hang or memory finding (docs/testing.md,
//! "Fuzzing"). The long run is `cargo run -p tart-kubelet-fuzz`.

use std::time::Duration;

use crate::{Plan, corpus, run, targets};

/// Mutated inputs per target: the whole run takes a few seconds in a debug build.
const INPUTS: u64 = 400;

#[test]
fn every_target_survives_its_corpus_and_mutated_inputs() {
    let plan = Plan {
        seed: 0x7a27,
        inputs: INPUTS,
        time: Duration::from_secs(20),
        // Generous for a loaded CI machine; a parser that is quadratic on its seeds takes far
        // longer.
        per_input: Duration::from_secs(5),
        max_len: 1024,
        keep: 3,
    };
    let mut failures = Vec::new();
    for t in targets() {
        let committed = corpus::load(&corpus::committed_dir(), t.name).unwrap();
        let r = run(&t, &committed, &plan);
        println!(
            "{}: {} inputs ({} corpus), peak alloc {} KiB, slowest {:?}",
            r.target,
            r.inputs,
            r.corpus,
            r.peak_alloc >> 10,
            r.slowest
        );
        // A clean run goes on past the corpus (a hang ends it there, and is a finding below).
        assert!(
            r.inputs > r.corpus || !r.clean(),
            "{}: no mutated input ran",
            r.target
        );
        for f in &r.findings {
            let shown: String = String::from_utf8_lossy(&f.input)
                .chars()
                .take(200)
                .collect();
            failures.push(format!(
                "{} {}: {} on {shown:?}",
                r.target,
                f.kind.as_str(),
                f.message
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
