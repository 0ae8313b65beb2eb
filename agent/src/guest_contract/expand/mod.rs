//! `$(VAR)` expansion with kubelet's rules (its `third_party/forked/golang/expansion`), used for
//! `env[].value`, `command`, `args` and `subPathExpr`:
//!
//! - `$(NAME)` is replaced by NAME's value when NAME is defined, and left as written when not;
//! - `$$` is an escaped `$` and gives one `$` (so `$$(NAME)` gives `$(NAME)`);
//! - `$` before anything else, a `$` at the end, and a `$(` with no later `)` stay as written;
//! - the name is everything up to the first `)`, unchecked, so `$(A$(B))` looks up `A$(B`;
//! - a replaced value is not expanded again.
//!
//! One difference from kubelet: a `$` followed by a non-ASCII character is copied as is, where
//! kubelet's byte-wise copy re-encodes the character's first byte and corrupts it.
//!
//! Pure; the caller supplies the variables through a lookup function.

/// One piece of an input string: text to copy, or a `$(NAME)` reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'a> {
    /// Copied to the output as is.
    Text(&'a str),
    /// The name inside `$(…)`.
    Ref(&'a str),
}

/// Split `input` into text and references. Every delimiter kubelet looks at (`$`, `(`, `)`) is
/// ASCII, so each slice boundary falls on a character boundary.
fn pieces(input: &str) -> Vec<Piece<'_>> {
    let bytes = input.as_bytes();
    let mut out = Vec::new();
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor + 1 < bytes.len() {
        if bytes[cursor] != b'$' {
            cursor += 1;
            continue;
        }
        match bytes[cursor + 1] {
            b'$' => {
                // `$$`: keep the text up to and including the first `$`, drop the second.
                out.push(Piece::Text(&input[checkpoint..=cursor]));
                checkpoint = cursor + 2;
                cursor += 2;
            }
            b'(' => match input[cursor + 2..].find(')') {
                Some(len) => {
                    out.push(Piece::Text(&input[checkpoint..cursor]));
                    let end = cursor + 2 + len;
                    out.push(Piece::Ref(&input[cursor + 2..end]));
                    checkpoint = end + 1;
                    cursor = end + 1;
                }
                // No closing parenthesis anywhere after: the `$(` is text, and so is any
                // later `$(`, but a later `$$` is still an escape.
                None => cursor += 2,
            },
            _ => cursor += 1,
        }
    }
    out.push(Piece::Text(&input[checkpoint..]));
    out.retain(|p| *p != Piece::Text(""));
    out
}

/// Expand `$(VAR)` references in `input`; `lookup` gives a variable's value, `None` when the
/// variable is not defined (the reference then stays as written).
pub(crate) fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    for piece in pieces(input) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Ref(name) => match lookup(name) {
                Some(v) => out.push_str(&v),
                None => push_ref(&mut out, name),
            },
        }
    }
    out
}

/// [`expand`] for values that are bytes (a Secret's value need not be UTF-8): the referenced
/// values are copied byte for byte, so nothing is lost.
pub(crate) fn expand_bytes<'v>(input: &str, lookup: &dyn Fn(&str) -> Option<&'v [u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    for piece in pieces(input) {
        match piece {
            Piece::Text(t) => out.extend_from_slice(t.as_bytes()),
            Piece::Ref(name) => match lookup(name) {
                Some(v) => out.extend_from_slice(v),
                None => {
                    let mut s = String::new();
                    push_ref(&mut s, name);
                    out.extend_from_slice(s.as_bytes());
                }
            },
        }
    }
    out
}

/// An undefined reference, written back as it was.
fn push_ref(out: &mut String, name: &str) {
    out.push_str("$(");
    out.push_str(name);
    out.push(')');
}

#[cfg(test)]
mod tests;
