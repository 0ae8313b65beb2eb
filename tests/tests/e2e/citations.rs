//! Every section citation in the repository resolves to a heading under `docs/`
//! (the form is in docs/reference/README.md; the check is `tart_kubelet_tests::citations`).

#[test]
fn every_section_citation_resolves_to_a_docs_heading() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let problems = tart_kubelet_tests::citations::check(&root).expect("read the repository");
    assert!(
        problems.is_empty(),
        "{} unresolved section citations:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
