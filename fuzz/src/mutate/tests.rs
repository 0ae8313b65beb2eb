use super::*;

#[test]
fn mutants_differ_stay_short_and_repeat_with_the_seed() {
    let seeds = vec![b"command=ls&output=1".to_vec()];
    let pool = Pool {
        inputs: &seeds,
        tokens: &["tty=1"],
        max_len: 64,
    };
    let run = |seed| {
        let mut rng = Rng::new(seed);
        (0..500)
            .map(|_| mutate(&mut rng, &seeds[0], &pool))
            .collect::<Vec<_>>()
    };
    let a = run(1);
    assert_eq!(a, run(1));
    assert!(a.iter().all(|m| m.len() <= 64));
    let changed = a.iter().filter(|m| **m != seeds[0]).count();
    assert!(changed > 450, "{changed} of 500 changed");
    assert!(a.iter().any(|m| m.windows(5).any(|w| w == b"tty=1")));
}
