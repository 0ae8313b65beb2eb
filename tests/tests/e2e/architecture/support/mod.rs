//! Reading a crate's module files from its `lib.rs` and resolving what each file refers to,
//! for `architecture.rs`.

use std::collections::{BTreeMap, BTreeSet};

use self::lex::{Tok, inline_paths, lex, strip_tests, text, use_tree};

mod folders;
mod lex;

pub(super) use folders::Table;

pub(super) type Module = Vec<String>;

/// One module file: where it sits, what it declares and imports, and what it mentions.
pub(super) struct File {
    pub rel: String,
    module: Module,
    children: BTreeSet<String>,
    /// Written paths with their lines: `use` leaves, inline paths, doc paths.
    refs: Vec<(Module, usize)>,
    /// Names bound by `use`, to the absolute path they stand for.
    pub aliases: BTreeMap<String, Module>,
}

impl File {
    fn parse(rel: &str, module: Module, src: &str) -> Self {
        let (doc, code): (Vec<Tok>, Vec<Tok>) =
            strip_tests(lex(src)).into_iter().partition(|t| t.doc);
        let children = (0..code.len())
            .filter(|&i| code[i].text == "mod" && text(&code, i + 2) == ";")
            .map(|i| text(&code, i + 1).to_owned())
            .collect();
        let (refs, aliases) = (Vec::new(), BTreeMap::new());
        let mut file = File {
            rel: rel.to_owned(),
            module,
            children,
            refs,
            aliases,
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
                if let (Some(abs), Some(name)) = (file.absolute(&path), name.filter(|n| n != "_")) {
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
            "super" if supers <= self.module.len() => (
                self.module[..self.module.len() - supers].to_vec(),
                &path[supers..],
            ),
            _ if self.children.contains(first) => (self.module.clone(), path),
            _ => (self.aliases.get(first)?.clone(), &path[1..]),
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }
}

/// The module files of one crate, from its root `lib.rs`.
pub(super) struct Crate(pub Vec<File>);

impl Crate {
    pub(super) fn load(read: impl Fn(&str) -> Option<String>) -> Self {
        let (mut files, mut queue) = (Vec::new(), vec![("lib.rs".to_owned(), Vec::new())]);
        while let Some((rel, module)) = queue.pop() {
            let src = read(&rel).unwrap_or_else(|| panic!("cannot read {rel}"));
            let file = File::parse(&rel, module, &src);
            let dir = match rel.strip_suffix("mod.rs") {
                _ if rel == "lib.rs" => String::new(),
                Some(dir) if dir.is_empty() || dir.ends_with('/') => dir.to_owned(),
                _ => format!("{}/", rel.trim_end_matches(".rs")),
            };
            for child in &file.children {
                if child == "tests" || child.ends_with("_tests") || child == "fixtures" {
                    continue;
                }
                let found = [format!("{dir}{child}.rs"), format!("{dir}{child}/mod.rs")]
                    .into_iter()
                    .find(|p| read(p).is_some());
                let found = found.unwrap_or_else(|| panic!("no file for `mod {child};` in {rel}"));
                let module = file.module.iter().chain([child]).cloned().collect();
                queue.push((found, module));
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
    pub(super) fn edges(&self) -> BTreeMap<(usize, usize), Vec<String>> {
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
    pub(super) fn cycles(&self) -> Vec<String> {
        let (edges, n) = (self.edges(), self.0.len());
        // Transitive closure: reach[a] holds every file a path of references leads to from a.
        let mut reach: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
        for &(a, b) in edges.keys() {
            reach[a].insert(b);
        }
        for k in 0..n {
            let via = reach[k].clone();
            for set in reach.iter_mut().filter(|set| set.contains(&k)) {
                set.extend(via.iter().copied());
            }
        }
        let mut out: Vec<(Vec<usize>, String)> = Vec::new();
        for a in 0..n {
            let scc: Vec<usize> = (0..n)
                .filter(|&b| b == a || (reach[a].contains(&b) && reach[b].contains(&a)))
                .collect();
            if scc.len() < 2 || out.iter().any(|(seen, _)| *seen == scc) {
                continue;
            }
            let names: Vec<&str> = scc.iter().map(|&f| self.0[f].rel.as_str()).collect();
            let mut report = format!("cycle between {}:", names.join(", "));
            for ((a, b), why) in edges
                .iter()
                .filter(|((a, b), _)| scc.contains(a) && scc.contains(b))
            {
                report += &format!(
                    "\n  {} -> {}: {}",
                    self.0[*a].rel,
                    self.0[*b].rel,
                    why.join(", ")
                );
            }
            out.push((scc, report));
        }
        out.into_iter().map(|(_, report)| report).collect()
    }
}
