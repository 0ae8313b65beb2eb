use super::*;

#[test]
fn targets_have_distinct_names_and_seeds() {
    let all = targets();
    let mut names: Vec<&str> = all.iter().map(|t| t.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len());
    assert!(all.iter().all(|t| !(t.seeds)().is_empty()));
}
