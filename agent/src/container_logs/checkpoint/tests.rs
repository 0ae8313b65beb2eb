use super::*;

#[test]
fn checkpoints_round_trip_and_skip_bad_lines() {
    let points = vec![Some((11, 5)), None, Some((12, 0))];
    let text = encode(&points);
    assert_eq!(text, "0 11 5\n2 12 0\n");
    assert_eq!(parse(&text), [(0, 11, 5), (2, 12, 0)]);
    assert_eq!(parse("0 1\nx 1 2\n1 2 3 4\n3 4 5"), [(3, 4, 5)]);
}
