use super::*;

#[test]
fn the_sequence_is_fixed_by_the_seed() {
    let a: Vec<u64> = (0..4)
        .map({
            let mut r = Rng::new(7);
            move |_| r.next_u64()
        })
        .collect();
    let mut r = Rng::new(7);
    assert_eq!(a, (0..4).map(|_| r.next_u64()).collect::<Vec<_>>());
    // SplitMix64's published first output for seed 0.
    assert_eq!(Rng::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    assert!((0..1000).all(|_| r.below(10) < 10));
    assert_eq!(r.below(0), 0);
}
