//! No import circles between the files of a crate (`agent/src`, `tart/src`), checked by reading
//! the sources: no build, no parser crate.
//!
//! From `lib.rs`, every `mod x;` not under `#[cfg(test)]` is followed to its file (modules
//! named `tests`, `*_tests` and `fixtures` are never read; `main.rs` is a crate of its own). A file refers to a module with a
//! `use` tree (groups, `self`, `super`, `crate` and child-module paths), with an inline path
//! that starts with `crate`, `super`, `self`, a child module or a name the file imported, and
//! with such a path in a doc comment. Each reference is resolved to the deepest module it
//! names, then through re-exports (`pub use a::X` in that module) to the file that defines the
//! item, so `crate::Error` leads to `error.rs`, not to `lib.rs`. `mod x;` itself is no edge, and
//! `#[cfg(test)]` items are dropped. Every strongly connected component of more than one file
//! is a cycle; the failure names its files and the paths that tie them. Between the top-level
//! modules of `agent/src` (a folder, or a file at the crate root) only the arrows of
//! docs/architecture.md's folder table are allowed, and that table has no cycle. The reading,
//! resolving and the folder check live in `architecture/support/`.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use support::{Crate, Table};

fn check(src_dir: &str) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(src_dir);
    let krate = Crate::load(|rel| std::fs::read_to_string(root.join(rel)).ok());
    assert!(
        krate.0.len() > 5,
        "read only {} files of {src_dir}",
        krate.0.len()
    );
    let cycles = krate.cycles();
    assert!(
        cycles.is_empty(),
        "import cycles in {src_dir}:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn tart_src_has_no_import_cycles() {
    check("tart/src");
}

#[test]
fn agent_src_has_no_import_cycles() {
    check("agent/src");
}

/// A crate from in-memory files, and each file's targets by name.
fn mem(files: &[(&str, &str)]) -> (Crate, BTreeMap<String, BTreeSet<String>>) {
    let map: BTreeMap<&str, &str> = files.iter().copied().collect();
    let c = Crate::load(|rel| map.get(rel).map(|s| s.to_string()));
    let mut targets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in c.edges().keys() {
        targets
            .entry(c.0[*a].rel.clone())
            .or_default()
            .insert(c.0[*b].rel.clone());
    }
    (c, targets)
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

const LIB: &str = "pub mod a;\npub mod b;\nmod c;\npub use b::Thing;\n";

#[test]
fn a_grouped_use_resolves_each_leaf_to_its_deepest_module() {
    let a = "use crate::{b::{self, inner::Deep}, c::f as g};\n";
    let b = "pub mod inner;";
    let (c, targets) = mem(&[
        ("lib.rs", LIB),
        ("a.rs", a),
        ("b.rs", b),
        ("b/inner.rs", ""),
        ("c.rs", ""),
    ]);
    assert_eq!(targets["a.rs"], set(&["b.rs", "b/inner.rs", "c.rs"]));
    assert_eq!(
        c.0.iter().find(|f| f.rel == "a.rs").unwrap().aliases["g"],
        ["c", "f"]
    );
}

#[test]
fn super_paths_and_doc_links_are_edges_and_reexports_lead_to_the_defining_file() {
    let a = "//! See [`super::c`].\nfn f() -> crate::Thing { todo!() }\n";
    let b = "pub struct Thing;\n/// [`crate::a`] builds it.\npub fn g() {}\n";
    let (c, targets) = mem(&[("lib.rs", LIB), ("a.rs", a), ("b.rs", b), ("c.rs", "")]);
    assert_eq!(targets["a.rs"], set(&["b.rs", "c.rs"]));
    assert_eq!(targets["b.rs"], set(&["a.rs"]));
    let cycles = c.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].contains("a.rs -> b.rs: line 2 `crate::Thing`"),
        "{}",
        cycles[0]
    );
    assert!(
        cycles[0].contains("b.rs -> a.rs: line 2 `crate::a`"),
        "{}",
        cycles[0]
    );
}

#[test]
fn test_items_strings_comments_and_mod_declarations_are_not_edges() {
    let a = "mod inner;\n// crate::b::x\nconst S: &str = \"crate::c::y\";\nconst C: char = '{';\n\
             #[cfg(test)]\nmod tests {\n    use crate::b;\n}\n";
    let inner = "use super::super::c::Z;\n";
    let files = [
        ("lib.rs", LIB),
        ("a.rs", a),
        ("a/inner.rs", inner),
        ("b.rs", ""),
        ("c.rs", ""),
    ];
    let (c, targets) = mem(&files);
    assert!(!targets.contains_key("a.rs"), "{targets:?}");
    assert_eq!(targets["a/inner.rs"], set(&["c.rs"]));
    assert!(c.cycles().is_empty());
}

/// The folder table of docs/architecture.md, checked against the imports of `agent/src`.
#[test]
fn agent_src_folders_import_only_as_docs_architecture_md_allows() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(dir.join("docs/architecture.md")).unwrap();
    let table = Table::parse(&doc).unwrap_or_else(|e| panic!("docs/architecture.md: {e}"));
    let src = dir.join("agent/src");
    let krate = Crate::load(|rel| std::fs::read_to_string(src.join(rel)).ok());
    let problems = [table.problems(), krate.folder_violations(&table)].concat();
    assert!(
        problems.is_empty(),
        "agent/src against docs/architecture.md's folder table:\n{}",
        problems.join("\n")
    );
}
