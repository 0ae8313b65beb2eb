//! The folder check: the import arrows between the top-level modules of a crate (a folder with
//! its `x.rs`, or a top-level file), compared with the table docs/architecture.md keeps as data.
//!
//! The table is the fenced block whose info string is `text folders`. Each line is
//! `module: allowed, allowed, …`; `(root)` is `lib.rs` itself, `*` allows every module but
//! `(root)` (nothing imports the crate root; a path through it resolves to the file beyond), a
//! name starting with `@` is a group defined by a line `@group: module, …`, and `#` starts a
//! comment. The table itself must have no cycle, so a crate that keeps to it has none.

use std::collections::{BTreeMap, BTreeSet};

use super::Crate;

/// The name of the crate root's own module (`lib.rs`) in the table.
pub(super) const ROOT: &str = "(root)";

/// The allowed arrows: each module to the modules it may import (`*`: any).
pub(crate) struct Table(pub BTreeMap<String, BTreeSet<String>>);

impl Table {
    /// The table read from the `text folders` block of a markdown document.
    pub(crate) fn parse(markdown: &str) -> Result<Self, String> {
        let block = markdown
            .split("```text folders\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .ok_or("no ```text folders block")?;
        let (mut groups, mut rows) = (BTreeMap::new(), BTreeMap::new());
        for (n, line) in block.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let (name, list) = line
                .split_once(':')
                .ok_or(format!("folders block line {}: no `:` in `{line}`", n + 1))?;
            let list: Vec<String> = list
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let target = if name.starts_with('@') {
                &mut groups
            } else {
                &mut rows
            };
            if target.insert(name.trim().to_owned(), list).is_some() {
                return Err(format!("folders block: `{}` has two rows", name.trim()));
            }
        }
        let mut table = BTreeMap::new();
        for (name, list) in rows {
            let mut allowed = BTreeSet::new();
            for item in list {
                match groups.get(&item) {
                    Some(members) => allowed.extend(members.iter().cloned()),
                    None if item.starts_with('@') => {
                        return Err(format!("folders block: `{name}` names unknown `{item}`"));
                    }
                    None => {
                        allowed.insert(item);
                    }
                }
            }
            table.insert(name, allowed);
        }
        Ok(Table(table))
    }

    /// Whether `from` may import `to`.
    pub(crate) fn allows(&self, from: &str, to: &str) -> bool {
        self.0
            .get(from)
            .is_some_and(|allowed| allowed.contains(to) || (allowed.contains("*") && to != ROOT))
    }

    /// Every problem of the table itself: a name with no row, and each cycle of its arrows
    /// (`*` counted as an arrow to every other row but the root's).
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (from, allowed) in &self.0 {
            for to in allowed
                .iter()
                .filter(|to| *to != "*" && !self.0.contains_key(*to))
            {
                out.push(format!("`{from}` may import `{to}`, which has no row"));
            }
        }
        let names: Vec<&String> = self.0.keys().collect();
        let arrow = |a: &str, b: &str| a != b && self.allows(a, b);
        for a in &names {
            let reach = reachable(a, &names, &arrow);
            if reach.contains(a.as_str()) {
                out.push(format!("the table's arrows lead from `{a}` back to it"));
            }
        }
        out
    }
}

/// The rows reached from `start` by one or more arrows.
fn reachable<'a>(
    start: &str,
    names: &[&'a String],
    arrow: &impl Fn(&str, &str) -> bool,
) -> BTreeSet<&'a str> {
    let (mut seen, mut todo) = (BTreeSet::new(), vec![start.to_owned()]);
    while let Some(at) = todo.pop() {
        for next in names.iter().filter(|n| arrow(&at, n)) {
            if seen.insert(next.as_str()) {
                todo.push(next.to_string());
            }
        }
    }
    seen
}

impl Crate {
    /// The top-level module a file belongs to: `pods` for `pods.rs` and `pods/…`, `api` for
    /// `api.rs`, [`ROOT`] for `lib.rs`.
    pub(crate) fn folder(&self, file: usize) -> String {
        self.0[file]
            .module
            .first()
            .cloned()
            .unwrap_or_else(|| ROOT.to_owned())
    }

    /// Each import between top-level modules the table does not allow, naming the file and
    /// the import; and each module with no row.
    pub(crate) fn folder_violations(&self, table: &Table) -> Vec<String> {
        let mut out = BTreeSet::new();
        for f in 0..self.0.len() {
            let folder = self.folder(f);
            if !table.0.contains_key(&folder) {
                out.insert(format!("`{folder}` ({}) has no row", self.0[f].rel));
            }
        }
        for ((a, b), why) in self.edges() {
            let (from, to) = (self.folder(a), self.folder(b));
            if from != to && !table.allows(&from, &to) {
                let (fa, fb) = (&self.0[a].rel, &self.0[b].rel);
                out.insert(format!(
                    "`{from}` may not import `{to}`: {fa} -> {fb}: {}",
                    why.join(", ")
                ));
            }
        }
        out.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn krate(files: &[(&str, &str)]) -> Crate {
        let map: BTreeMap<&str, &str> = files.iter().copied().collect();
        Crate::load(|rel| map.get(rel).map(|s| s.to_string()))
    }

    fn table(rows: &str) -> Table {
        Table::parse(&format!("# Doc\n\n```text folders\n{rows}```\n")).unwrap()
    }

    const FILES: &[(&str, &str)] = &[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "mod inner;\n"),
        ("a/inner.rs", "use crate::b::X;\n"),
        ("b.rs", "pub struct X;\n"),
        ("c.rs", ""),
    ];

    #[test]
    fn a_file_belongs_to_its_top_level_module_and_lib_rs_to_the_root() {
        let k = krate(FILES);
        let folder = |rel: &str| k.folder(k.0.iter().position(|f| f.rel == rel).unwrap());
        assert_eq!(folder("a/inner.rs"), "a");
        assert_eq!(folder("a.rs"), "a");
        assert_eq!(folder("b.rs"), "b");
        assert_eq!(folder("lib.rs"), ROOT);
    }

    #[test]
    fn an_arrow_the_table_does_not_list_fails_naming_the_file_and_the_import() {
        let k = krate(FILES);
        let bad = k.folder_violations(&table("(root): *\na: c\nb:\nc:\n"));
        assert_eq!(
            bad,
            ["`a` may not import `b`: a/inner.rs -> b.rs: line 1 `crate::b::X`"]
        );
        assert!(
            k.folder_violations(&table("(root): *\na: b\nb:\nc:\n"))
                .is_empty()
        );
        let missing = k.folder_violations(&table("(root): *\na: b\nb:\n"));
        assert_eq!(missing, ["`c` (c.rs) has no row"]);
    }

    #[test]
    fn groups_and_stars_expand_and_a_table_with_a_cycle_or_an_unknown_name_is_refused() {
        let t = table("@low: b, c  # foundations\n(root): *\na: @low\nb:\nc:\n");
        assert!(t.allows("a", "c") && t.allows("(root)", "a") && !t.allows("b", "a"));
        assert!(!t.allows("(root)", ROOT), "`*` never reaches the root");
        assert!(t.problems().is_empty(), "{:?}", t.problems());
        let cyclic = table("a: b\nb: c\nc: a\n").problems();
        assert_eq!(cyclic.len(), 3, "{cyclic:?}");
        assert!(cyclic[0].contains("from `a` back to it"), "{cyclic:?}");
        let star = table("a: *\nb: a\n").problems();
        assert!(!star.is_empty(), "`*` is an arrow to every other row");
        let unknown = table("a: d\n").problems();
        assert_eq!(unknown, ["`a` may import `d`, which has no row"]);
        assert!(Table::parse("no block").is_err());
        assert!(Table::parse("```text folders\na: b\na: c\n```").is_err());
    }
}
