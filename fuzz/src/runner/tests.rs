use super::*;

fn has(data: &[u8], word: &[u8]) -> bool {
    data.windows(word.len()).any(|w| w == word)
}

/// Panics on `BANG`, never ends on `HANG`, allocates 8 MiB on `HEAP` (words random bytes do
/// not make).
fn flawed(data: &[u8]) {
    if has(data, b"BANG") {
        panic!("bang");
    }
    if has(data, b"HANG") {
        loop {
            thread::park();
        }
    }
    if has(data, b"HEAP") {
        let big = vec![1u8; 8 << 20];
        assert_eq!(big.len(), 8 << 20);
    }
}

fn seeds() -> Vec<Vec<u8>> {
    vec![b"ok".to_vec()]
}

fn target(tokens: &'static [&'static str]) -> Target {
    Target {
        name: "flawed",
        run: flawed,
        seeds,
        tokens,
        max_alloc: 1 << 20,
    }
}

fn plan(inputs: u64) -> Plan {
    Plan {
        seed: 1,
        inputs,
        time: Duration::from_secs(60),
        per_input: Duration::from_millis(500),
        max_len: 64,
        keep: 2,
    }
}

#[test]
fn crashes_hangs_and_memory_are_found_with_their_inputs() {
    let clean = run(&target(&[]), &[], &plan(200));
    assert!(clean.clean(), "{:?}", clean.findings);
    assert_eq!((clean.inputs, clean.corpus), (201, 1));

    let r = run(&target(&["BANG"]), &[], &plan(300));
    assert!(r.counts[0] > 10, "{:?}", r.counts);
    assert_eq!(r.findings.len(), 2, "two kept");
    let crash = &r.findings[0];
    assert!(has(&crash.input, b"BANG"));
    assert!(
        crash.message.contains("runner/tests.rs") && crash.message.ends_with("bang"),
        "{}",
        crash.message
    );
    assert_eq!(r.inputs, 301, "a crash does not end the run");

    let r = run(&target(&["HEAP"]), &[], &plan(100));
    assert!(r.counts[2] > 0, "{:?}", r.counts);
    assert!(r.peak_alloc >= 8 << 20, "{}", r.peak_alloc);

    let r = run(&target(&[]), &[b"aHANG".to_vec()], &plan(100));
    assert_eq!(r.counts[1], 1);
    assert_eq!(r.findings[0].input, b"aHANG");
    assert_eq!(r.inputs, 2, "a hang ends the target's run");
}
