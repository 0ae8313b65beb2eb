//! Section citations resolve inside the repository: every section sign (U+00A7) followed by a
//! number, in any text file, names a Markdown file under `docs/` that has a heading carrying that
//! number. The citation form is described in docs/reference/README.md:
//!
//! - a citation is a repository-relative path to a Markdown file under `docs/`, a space, the
//!   section sign and a dot-separated number, as in docs/reference/tart-cli.md §2.6;
//! - later marks on the same line belong to the nearest path before them on that line, so a list
//!   such as docs/reference/tart-cli.md §2.6, §3.2 names the file once;
//! - inside a Markdown file under `docs/`, a mark with no path before it on its line cites the
//!   file it is written in;
//! - a heading carries a number when its text starts with the sign and the number, as the
//!   heading of docs/reference/tart-cli.md §2.6 does.
//!
//! [`check`] walks the repository and reports each mark that does not resolve; the parsing is
//! pure ([`cited`], [`heading_numbers`]) so it is tested on strings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The section sign.
const SECTION: char = '\u{a7}';

/// Directories never read: build output and git's own data.
const SKIPPED_DIRS: &[&str] = &[".git", "target"];

/// One section mark and what it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    /// 1-based line of the mark.
    pub line: usize,
    /// The Markdown file it cites (repository-relative), or `None` when the line names none.
    pub file: Option<String>,
    /// The section number after the mark, or `None` when no number follows it.
    pub section: Option<String>,
}

/// The section numbers that headings of a Markdown text carry: those whose text starts with
/// the section sign and a number.
pub fn heading_numbers(markdown: &str) -> BTreeSet<String> {
    let mut fence = false;
    let mut out = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence || !line.starts_with('#') {
            continue;
        }
        let text = line.trim_start_matches('#');
        if !text.starts_with(' ') {
            continue;
        }
        if let Some(rest) = text.trim_start().strip_prefix(SECTION)
            && let Some(n) = section_number(rest)
        {
            out.insert(n);
        }
    }
    out
}

/// The section marks of one file. `rel` is the file's repository-relative path with `/` separators;
/// it is the cited file for bare marks when it is a Markdown file under `docs/`.
pub fn cited(rel: &str, text: &str) -> Vec<Citation> {
    let self_file = (rel.starts_with("docs/") && rel.ends_with(".md")).then(|| rel.to_string());
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices(SECTION) {
            let file = last_docs_path(&line[..at]).or_else(|| self_file.clone());
            let section = section_number(&line[at + SECTION.len_utf8()..]);
            out.push(Citation {
                line: i + 1,
                file,
                section,
            });
        }
    }
    out
}

/// The problems of one file's marks against the headings of `docs/` (file → numbers).
pub fn problems(
    rel: &str,
    text: &str,
    headings: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for c in cited(rel, text) {
        let at = format!("{rel}:{}", c.line);
        match (&c.file, &c.section) {
            (_, None) => out.push(format!("{at}: {SECTION} without a section number")),
            (None, Some(n)) => out.push(format!(
                "{at}: {SECTION}{n} names no file (write docs/<file>.md {SECTION}{n})"
            )),
            (Some(f), Some(n)) => match headings.get(f) {
                None => out.push(format!(
                    "{at}: {SECTION}{n} cites {f}, which does not exist"
                )),
                Some(nums) if !nums.contains(n) => out.push(format!(
                    "{at}: {SECTION}{n} cites {f}, which has no heading {SECTION}{n}"
                )),
                Some(_) => {}
            },
        }
    }
    out
}

/// Every unresolved section mark in the text files under `root` (a repository checkout), as
/// `path:line: reason` lines. Files that are not UTF-8 are skipped.
pub fn check(root: &Path) -> std::io::Result<Vec<String>> {
    let mut files = BTreeMap::new();
    collect(root, root, &mut files)?;
    let headings: BTreeMap<String, BTreeSet<String>> = files
        .iter()
        .filter(|(rel, _)| rel.starts_with("docs/") && rel.ends_with(".md"))
        .map(|(rel, text)| (rel.clone(), heading_numbers(text)))
        .collect();
    Ok(files
        .iter()
        .flat_map(|(rel, text)| problems(rel, text, &headings))
        .collect())
}

/// Reads every UTF-8 file under `dir` into `out`, keyed by its path relative to `root`.
fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if !SKIPPED_DIRS.iter().any(|s| name == *s) {
                collect(root, &path, out)?;
            }
        } else if kind.is_file()
            && let Ok(text) = String::from_utf8(std::fs::read(&path)?)
        {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.insert(rel.join("/"), text);
        }
    }
    Ok(())
}

/// The dot-separated number at the start of `s` (`2.6` of `2.6: …`), without a trailing dot.
fn section_number(s: &str) -> Option<String> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let n = s[..end].trim_end_matches('.');
    (!n.is_empty() && n.split('.').all(|p| !p.is_empty())).then(|| n.to_string())
}

/// The last `docs/….md` path in `s`.
fn last_docs_path(s: &str) -> Option<String> {
    let mut found = None;
    for (at, _) in s.match_indices("docs/") {
        let starts_word = s[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '/' || c == '.'));
        if !starts_word {
            continue;
        }
        let rest = &s[at..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches('.');
        if path.ends_with(".md") {
            found = Some(path.to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests;
