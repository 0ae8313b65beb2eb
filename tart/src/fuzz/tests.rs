use super::*;

#[test]
fn every_seed_passes_its_target() {
    for t in targets() {
        for s in (t.seeds)() {
            (t.run)(&s);
        }
    }
}
