//! No import circles between the files of a crate (`agent/src`, `tart/src`), checked by reading
//! the sources: no build, no parser crate.
//!
//! From `lib.rs`, every `mod x;` not under `#[cfg(test)]` is followed to its file (files named
//! `tests.rs`, `*_tests.rs` and `fixtures.rs` are never read). A file refers to a module with a
//! `use` tree (groups, `self`, `super`, `crate` and child-module paths), with an inline path
//! that starts with `crate`, `super`, `self`, a child module or a name the file imported, and
//! with such a path in a doc comment. Each reference is resolved to the deepest module it
//! names, then through re-exports (`pub use a::X` in that module) to the file that defines the
//! item, so `crate::Error` leads to `error.rs`, not to `lib.rs`. `mod x;` itself is no edge, and
//! `#[cfg(test)]` items are dropped. Every strongly connected component of more than one file
//! is a cycle; the failure names its files and the paths that tie them.

use std::collections::{BTreeMap, BTreeSet};

type Module = Vec<String>;

#[derive(Debug, Clone)]
struct Tok {
    text: String,
    line: usize,
}

/// One module file: where it sits, what it declares and imports, and what it mentions.
struct File {
    rel: String,
    module: Module,
    children: BTreeSet<String>,
    /// Written paths with their lines: `use` leaves, inline paths, doc paths.
    refs: Vec<(Vec<String>, usize)>,
    /// Names bound by `use`, to the absolute path they stand for.
    aliases: BTreeMap<String, Module>,
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Splits Rust source into code and doc-comment text of the same length (everything else
/// blanked, lines kept), with `#[cfg(test)]` items blanked in both.
fn split(src: &str) -> (Vec<char>, Vec<char>) {
    let s: Vec<char> = src.chars().collect();
    let blank = |c: &char| if *c == '\n' { '\n' } else { ' ' };
    let mut code: Vec<char> = s.iter().map(blank).collect();
    let mut doc = code.clone();
    let at = |i: usize, p: &str| p.chars().enumerate().all(|(k, c)| s.get(i + k) == Some(&c));
    let mut i = 0;
    while i < s.len() {
        let after_ident = i > 0 && (s[i - 1].is_alphanumeric() || s[i - 1] == '_');
        let raw = (!after_ident && at(i, "r") && (at(i + 1, "\"") || at(i + 1, "#")))
            .then(|| s[i + 1..].iter().take_while(|c| **c == '#').count());
        if at(i, "//") {
            let end = s[i..]
                .iter()
                .position(|c| *c == '\n')
                .map_or(s.len(), |p| i + p);
            if (at(i, "///") && !at(i, "////")) || at(i, "//!") {
                doc[i + 3..end].copy_from_slice(&s[i + 3..end]);
            }
            i = end;
        } else if at(i, "/*") {
            let is_doc = (at(i, "/**") && !at(i, "/**/")) || at(i, "/*!");
            let mut depth = 0;
            while i < s.len() {
                if at(i, "/*") || at(i, "*/") {
                    depth += if at(i, "/*") { 1 } else { -1 };
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if is_doc {
                        doc[i] = s[i];
                    }
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw.filter(|h| at(i + 1 + h, "\"")) {
            let close: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            i += 2 + hashes;
            while i < s.len() && !at(i, &close) {
                i += 1;
            }
            i += close.len();
        } else if s[i] == '"' {
            i += 1;
            while i < s.len() && s[i] != '"' {
                i += if s[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if at(i, "'\\") || (at(i, "'") && at(i + 2, "'")) {
            // A char literal; an escaped one is longer and ends at the next quote.
            i += if at(i, "'\\") { 4 } else { 3 };
            while i < s.len() && s[i - 1] != '\'' {
                i += 1;
            }
        } else {
            code[i] = s[i];
            i += 1;
        }
    }
    let pat: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut from = 0;
    while let Some(p) = (from..code.len()).find(|&p| code[p..].starts_with(&pat)) {
        let (mut k, mut depth) = (p + pat.len(), 0i32);
        while k < code.len() {
            match code[k] {
                '{' | '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        k += 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    k += 1;
                    break;
                }
                _ => {}
            }
            k += 1;
        }
        for j in p..k.min(code.len()) {
            code[j] = blank(&code[j]);
            doc[j] = blank(&doc[j]);
        }
        from = k;
    }
    (code, doc)
}

fn tokens(chars: &[char]) -> Vec<Tok> {
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < chars.len() {
        let start = i;
        let word = |c: &char| c.is_alphanumeric() || *c == '_';
        if chars[i] == '\n' {
            line += 1;
        } else if word(&chars[i]) {
            while i + 1 < chars.len() && word(&chars[i + 1]) {
                i += 1;
            }
        } else if chars[i] == ':' && chars.get(i + 1) == Some(&':') {
            i += 1;
        }
        if !chars[start].is_whitespace() {
            let text = chars[start..=i].iter().collect();
            out.push(Tok { text, line });
        }
        i += 1;
    }
    out
}

fn text(t: &[Tok], i: usize) -> &str {
    t.get(i).map_or("", |t| t.text.as_str())
}

/// Reads one `use` tree from `t[*i]`: each leaf path with the name it binds (`None`: a glob).
fn use_tree(t: &[Tok], i: &mut usize, prefix: Module, out: &mut Vec<(Module, Option<String>)>) {
    let (mut path, start) = (prefix.clone(), prefix.len());
    while *i < t.len() {
        let s = text(t, *i).to_owned();
        *i += 1;
        match s.as_str() {
            "::" => {}
            "*" => return out.push((path, None)),
            "{" => {
                while *i < t.len() && text(t, *i) != "}" {
                    let before = *i;
                    use_tree(t, i, path.clone(), out);
                    *i += usize::from(text(t, *i) == "," || *i == before);
                }
                *i += 1;
                return;
            }
            s if is_ident(s) => {
                // `self` in a group names the group's own prefix.
                if !(s == "self" && path.len() == start && start > 0) {
                    path.push(s.to_owned());
                }
                if text(t, *i) != "::" {
                    let name = if text(t, *i) == "as" {
                        *i += 2;
                        text(t, *i - 1).to_owned()
                    } else {
                        path.last().cloned().unwrap_or_default()
                    };
                    return out.push((path, Some(name)));
                }
            }
            _ => return,
        }
    }
}

/// Maximal `a::b::…` runs of at least two segments outside `skip`, with their lines.
fn inline_paths(t: &[Tok], skip: &[(usize, usize)]) -> Vec<(Module, usize)> {
    let mut out = Vec::new();
    for i in 0..t.len() {
        let starts = is_ident(&t[i].text) && (i == 0 || t[i - 1].text != "::");
        if !starts || skip.iter().any(|(a, b)| (*a..=*b).contains(&i)) {
            continue;
        }
        let mut path = vec![t[i].text.clone()];
        while text(t, i + 2 * path.len() - 1) == "::" && is_ident(text(t, i + 2 * path.len())) {
            path.push(text(t, i + 2 * path.len()).to_owned());
        }
        if path.len() > 1 {
            out.push((path, t[i].line));
        }
    }
    out
}

impl File {
    fn parse(rel: &str, module: Module, src: &str) -> Self {
        let (code, doc) = split(src);
        let (code, doc) = (tokens(&code), tokens(&doc));
        let children = (0..code.len())
            .filter(|&i| code[i].text == "mod" && text(&code, i + 2) == ";")
            .map(|i| text(&code, i + 1).to_owned())
            .collect();
        let mut file = File {
            rel: rel.to_owned(),
            module,
            children,
            refs: Vec::new(),
            aliases: BTreeMap::new(),
        };
        let mut uses = Vec::new();
        for u in (0..code.len()).filter(|&i| code[i].text == "use" && text(&code, i + 1) != "<") {
            let (mut i, mut leaves) = (u + 1, Vec::new());
            use_tree(&code, &mut i, Vec::new(), &mut leaves);
            while i < code.len() && code[i].text != ";" {
                i += 1;
            }
            uses.push((u, i));
            for (path, name) in leaves {
                let abs = file.absolute(&path);
                if let (Some(abs), Some(name)) = (abs, name.filter(|n| n != "_")) {
                    file.aliases.insert(name, abs);
                }
                file.refs.push((path, code[u].line));
            }
        }
        file.refs.extend(inline_paths(&code, &uses));
        file.refs.extend(inline_paths(&doc, &[]));
        file
    }

    /// The absolute module path a written path stands for here; `None` outside the crate.
    fn absolute(&self, path: &[String]) -> Option<Module> {
        let first = path.first()?.as_str();
        let supers = path.iter().take_while(|s| *s == "super").count();
        let (mut base, rest) = match first {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (self.module.clone(), &path[1..]),
            "super" if supers <= self.module.len() => {
                let keep = self.module.len() - supers;
                (self.module[..keep].to_vec(), &path[supers..])
            }
            _ if self.children.contains(first) => (self.module.clone(), path),
            _ => (self.aliases.get(first)?.clone(), &path[1..]),
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }
}

/// The module files of one crate, from its root `lib.rs`.
struct Crate(Vec<File>);

impl Crate {
    fn load(read: impl Fn(&str) -> Option<String>) -> Self {
        let (mut files, mut queue) = (Vec::new(), vec![("lib.rs".to_owned(), Vec::new())]);
        while let Some((rel, module)) = queue.pop() {
            let src = read(&rel).unwrap_or_else(|| panic!("cannot read {rel}"));
            let file = File::parse(&rel, module, &src);
            let dir = match rel.rsplit_once('/') {
                Some((dir, "mod.rs")) => format!("{dir}/"),
                None if rel == "lib.rs" || rel == "mod.rs" => String::new(),
                _ => format!("{}/", rel.trim_end_matches(".rs")),
            };
            for child in &file.children {
                let test_only =
                    child == "tests" || child.ends_with("_tests") || child == "fixtures";
                let found = [format!("{dir}{child}.rs"), format!("{dir}{child}/mod.rs")]
                    .into_iter()
                    .find(|p| read(p).is_some());
                let found = found.unwrap_or_else(|| panic!("no file for `mod {child};` in {rel}"));
                if !test_only {
                    let mut m = file.module.clone();
                    m.push(child.clone());
                    queue.push((found, m));
                }
            }
            files.push(file);
        }
        Crate(files)
    }

    /// The file that defines what `path` names: its deepest module, then through re-exports.
    fn locate(&self, mut path: Module) -> Option<usize> {
        for _ in 0..16 {
            let (depth, f) = (0..=path.len())
                .rev()
                .find_map(|d| Some((d, self.0.iter().position(|f| f.module == path[..d])?)))?;
            let Some(target) = path.get(depth).and_then(|n| self.0[f].aliases.get(n)) else {
                return Some(f);
            };
            let next: Module = target.iter().chain(&path[depth + 1..]).cloned().collect();
            if next == path {
                return Some(f);
            }
            path = next;
        }
        None
    }

    /// `(from, to) -> ["line N `path`"]` between distinct files.
    fn edges(&self) -> BTreeMap<(usize, usize), Vec<String>> {
        let mut edges = BTreeMap::<_, Vec<String>>::new();
        for (from, file) in self.0.iter().enumerate() {
            for (path, line) in &file.refs {
                let to = file.absolute(path).and_then(|abs| self.locate(abs));
                if let Some(to) = to.filter(|to| *to != from) {
                    let why = format!("line {line} `{}`", path.join("::"));
                    edges.entry((from, to)).or_default().push(why);
                }
            }
        }
        edges
    }

    /// Every cycle, as a report naming its files and the references between them.
    fn cycles(&self) -> Vec<String> {
        let edges = self.edges();
        let n = self.0.len();
        // Files that reach each other: reach[a] contains b when a path leads from a to b.
        let mut reach: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
        for &(a, b) in edges.keys() {
            reach[a].insert(b);
        }
        for k in 0..n {
            for a in 0..n {
                if reach[a].contains(&k) {
                    let via = reach[k].clone();
                    reach[a].extend(via);
                }
            }
        }
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for a in 0..n {
            let scc: Vec<usize> = (0..n)
                .filter(|&b| b == a || (reach[a].contains(&b) && reach[b].contains(&a)))
                .collect();
            if scc.len() < 2 || !seen.insert(scc.clone()) {
                continue;
            }
            let names: Vec<&str> = scc.iter().map(|&f| self.0[f].rel.as_str()).collect();
            let mut report = format!("cycle between {}:", names.join(", "));
            for ((a, b), why) in edges
                .iter()
                .filter(|((a, b), _)| scc.contains(a) && scc.contains(b))
            {
                let (a, b) = (&self.0[*a].rel, &self.0[*b].rel);
                report += &format!("\n  {a} -> {b}: {}", why.join(", "));
            }
            out.push(report);
        }
        out
    }
}

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

fn mem(files: &[(&str, &str)]) -> Crate {
    let map: BTreeMap<String, String> = files
        .iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect();
    Crate::load(|rel| map.get(rel).cloned())
}

/// Each file's targets, by file name.
fn targets(c: &Crate) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (a, b) in c.edges().keys() {
        out.entry(&c.0[*a].rel).or_default().insert(&c.0[*b].rel);
    }
    out
}

const TREE: &str = "pub mod a;\npub mod b;\nmod c;\npub use b::Thing;\n";

#[test]
fn a_grouped_use_resolves_each_leaf_to_its_deepest_module() {
    let lib = "pub mod a;\npub mod b;\nmod c;\n";
    let a = "use crate::{b::{self, inner::Deep}, c::f as g};\n";
    let c = mem(&[
        ("lib.rs", lib),
        ("a.rs", a),
        ("b.rs", "pub mod inner;"),
        ("b/inner.rs", ""),
        ("c.rs", ""),
    ]);
    let t = targets(&c);
    assert_eq!(t["a.rs"], BTreeSet::from(["b.rs", "b/inner.rs", "c.rs"]));
    assert_eq!(
        c.0.iter().find(|f| f.rel == "a.rs").unwrap().aliases["g"],
        ["c", "f"]
    );
}

#[test]
fn super_paths_and_doc_links_are_edges_and_reexports_lead_to_the_defining_file() {
    let a = "//! See [`super::c`].\nfn f() -> crate::Thing { todo!() }\n";
    let b = "pub struct Thing;\n/// [`crate::a`] builds it.\npub fn g() {}\n";
    let c = mem(&[("lib.rs", TREE), ("a.rs", a), ("b.rs", b), ("c.rs", "")]);
    let t = targets(&c);
    assert_eq!(t["a.rs"], BTreeSet::from(["b.rs", "c.rs"]));
    assert_eq!(t["b.rs"], BTreeSet::from(["a.rs"]));
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
    let a = "mod inner;\n// crate::b::x\nconst S: &str = \"crate::c::y\";\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\n";
    let inner = "use super::super::c::Z;\n";
    let c = mem(&[
        ("lib.rs", TREE),
        ("a.rs", a),
        ("a/inner.rs", inner),
        ("b.rs", ""),
        ("c.rs", ""),
    ]);
    let t = targets(&c);
    assert!(!t.contains_key("a.rs"), "{t:?}");
    assert_eq!(t["a/inner.rs"], BTreeSet::from(["c.rs"]));
    assert!(c.cycles().is_empty());
}
