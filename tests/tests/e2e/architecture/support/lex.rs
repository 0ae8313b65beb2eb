//! Tokens of Rust source for the import-cycle check: code tokens and the words of doc comments
//! with their lines, `#[cfg(test)]` items dropped, and the paths read from `use` trees and
//! from `a::b::…` runs.

use super::Module;

#[derive(Debug, Clone)]
pub(super) struct Tok {
    pub text: String,
    pub line: usize,
    pub doc: bool,
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// The end of the token at `s[i]`: a word, `::`, or one character.
fn token_end(s: &[char], i: usize) -> usize {
    let word = |c: &char| c.is_alphanumeric() || *c == '_';
    match s[i] {
        c if word(&c) => i + s[i..].iter().take_while(|c| word(c)).count(),
        ':' if s.get(i + 1) == Some(&':') => i + 2,
        _ => i + 1,
    }
}

fn push_tokens(s: &[char], mut line: usize, doc: bool, out: &mut Vec<Tok>) {
    let mut i = 0;
    while i < s.len() {
        let end = token_end(s, i);
        line += usize::from(s[i] == '\n');
        if !s[i].is_whitespace() {
            let text = s[i..end].iter().collect();
            out.push(Tok { text, line, doc });
        }
        i = end;
    }
}

/// Tokens of Rust source: code, plus the words of doc comments (`doc`); other comments and the
/// contents of string and char literals are dropped.
pub(super) fn lex(src: &str) -> Vec<Tok> {
    let s: Vec<char> = src.chars().collect();
    let at = |i: usize, p: &str| p.chars().enumerate().all(|(k, c)| s.get(i + k) == Some(&c));
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < s.len() {
        let after_word = i > 0 && (s[i - 1].is_alphanumeric() || s[i - 1] == '_');
        let hashes = s[i + 1..].iter().take_while(|c| **c == '#').count();
        let (end, doc) = if at(i, "//") {
            let end = s[i..]
                .iter()
                .position(|c| *c == '\n')
                .map_or(s.len(), |p| i + p);
            (end, at(i, "//!") || (at(i, "///") && !at(i, "////")))
        } else if at(i, "/*") {
            let (mut depth, mut k) = (0, i);
            while k < s.len() && (k == i || depth > 0) {
                let step = at(k, "/*") as i32 - at(k, "*/") as i32;
                depth += step;
                k += if step == 0 { 1 } else { 2 };
            }
            (k, at(i, "/*!") || (at(i, "/**") && !at(i, "/**/")))
        } else if !after_word && at(i, "r") && at(i + 1 + hashes, "\"") {
            let close: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let body = i + 2 + hashes;
            let len = (body..s.len()).find(|&k| at(k, &close)).unwrap_or(s.len());
            (len + close.len(), false)
        } else if s[i] == '"' || at(i, "'\\") || (at(i, "'") && at(i + 2, "'")) {
            // A string or char literal: up to the next unescaped quote of its kind.
            let mut k = i + 1;
            while k < s.len() && s[k] != s[i] {
                k += if s[k] == '\\' { 2 } else { 1 };
            }
            (k + 1, false)
        } else {
            let end = token_end(&s, i);
            push_tokens(&s[i..end], line, false, &mut out);
            (end, false)
        };
        let end = end.min(s.len());
        if doc {
            push_tokens(&s[i + 3..end], line, true, &mut out);
        }
        line += s[i..end].iter().filter(|c| **c == '\n').count();
        i = end;
    }
    out
}

/// Drops every item under `#[cfg(test)]`: up to its `;`, or to the end of its first block.
pub(super) fn strip_tests(t: Vec<Tok>) -> Vec<Tok> {
    let (mut out, mut i) = (Vec::new(), 0);
    const CFG_TEST: [&str; 7] = ["#", "[", "cfg", "(", "test", ")", "]"];
    while i < t.len() {
        if t[i].doc || (0..7).any(|k| t.get(i + k).map(|t| t.text.as_str()) != Some(CFG_TEST[k])) {
            out.push(t[i].clone());
            i += 1;
            continue;
        }
        let mut depth = 0;
        while i < t.len() {
            let s = if t[i].doc { "" } else { t[i].text.as_str() };
            depth +=
                i32::from(matches!(s, "{" | "(" | "[")) - i32::from(matches!(s, "}" | ")" | "]"));
            i += 1;
            if depth == 0 && (s == "}" || s == ";") {
                break;
            }
        }
    }
    out
}

pub(super) fn text(t: &[Tok], i: usize) -> &str {
    t.get(i).map_or("", |t| t.text.as_str())
}

/// Reads one `use` tree from `t[*i]`: each leaf path with the name it binds (`None`: a glob).
pub(super) fn use_tree(
    t: &[Tok],
    i: &mut usize,
    prefix: Module,
    out: &mut Vec<(Module, Option<String>)>,
) {
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
                    let renamed = text(t, *i) == "as";
                    *i += 2 * usize::from(renamed);
                    let name = if renamed {
                        text(t, *i - 1)
                    } else {
                        path.last().map_or("", |s| s.as_str())
                    };
                    return out.push((path.clone(), Some(name.to_owned())));
                }
            }
            _ => return,
        }
    }
}

/// Maximal `a::b::…` runs of at least two segments outside `skip`, with their lines.
pub(super) fn inline_paths(t: &[Tok], skip: &[(usize, usize)]) -> Vec<(Module, usize)> {
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
