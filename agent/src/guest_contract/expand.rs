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
pub fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
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
pub fn expand_bytes<'v>(input: &str, lookup: &dyn Fn(&str) -> Option<&'v [u8]>) -> Vec<u8> {
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
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn vars() -> HashMap<&'static str, &'static str> {
        HashMap::from([
            ("VAR_A", "A"),
            ("VAR_B", "B"),
            ("VAR_C", "C"),
            ("VAR_REF", "$(VAR_A)"),
            ("VAR_EMPTY", ""),
        ])
    }

    fn run(input: &str) -> String {
        let vars = vars();
        expand(input, &|n| vars.get(n).map(|v| (*v).to_owned()))
    }

    /// The cases of kubelet's expansion test, same inputs and expected outputs.
    #[test]
    fn expansion_matches_kubelets_cases() {
        let cases = [
            ("$(VAR_A)", "A"),
            ("$(VAR_A)-$(VAR_A)", "A-A"),
            ("$(VAR_A)-1", "A-1"),
            ("___$(VAR_B)___", "___B___"),
            ("___$(VAR_C)", "___C"),
            ("$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
            ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
            ("$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"),
            ("f000-$$VAR_A", "f000-$VAR_A"),
            ("foo\\$(VAR_C)bar", "foo\\Cbar"),
            ("foo\\\\$(VAR_C)bar", "foo\\\\Cbar"),
            ("foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"),
            ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
            ("$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"),
            ("$(VAR_REF)", "$(VAR_A)"),
            ("%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"),
            ("foo$(VAR_EMPTY)bar", "foobar"),
            ("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
            ("f00__(VAR_A)__", "f00__(VAR_A)__"),
            ("$?_boo_$!", "$?_boo_$!"),
            ("$VAR_A", "$VAR_A"),
            ("$(VAR_DNE)", "$(VAR_DNE)"),
            ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
            ("$$$$$$(VAR_A)", "$$$(VAR_A)"),
            ("$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"),
            ("$$$$$$$(VAR_A)", "$$$A"),
            ("$VAR_A)", "$VAR_A)"),
            ("${VAR_A}", "${VAR_A}"),
            ("$(VAR_B)_______$(A", "B_______$(A"),
            ("$(VAR_C)_______$(", "C_______$("),
            ("$(VAR_A)foobarzab$", "Afoobarzab$"),
            ("foo-\\$(VAR_A", "foo-\\$(VAR_A"),
            ("--$($($($($--", "--$($($($($--"),
            ("$($($($($--foo$(", "$($($($($--foo$("),
            ("foo0--$($($($(", "foo0--$($($($("),
            ("$(foo$$var)", "$(foo$$var)"),
            ("\n", "\n"),
        ];
        for (input, want) in cases {
            assert_eq!(run(input), want, "{input:?}");
        }
    }

    #[test]
    fn edge_inputs_keep_their_text() {
        let cases = [
            ("", ""),
            ("$", "$"),
            ("$$", "$"),
            ("$$$", "$$"),
            ("$()", "$()"),
            ("$(VAR_A)$(VAR_B)", "AB"),
            ("$(é)", "$(é)"),
            ("$é$(VAR_A)ü", "$éAü"),
            ("$($$(VAR_A)", "$($$(VAR_A)"),
            ("$$(VAR_A", "$(VAR_A"),
            ("a$(b", "a$(b"),
        ];
        for (input, want) in cases {
            assert_eq!(run(input), want, "{input:?}");
        }
    }

    #[test]
    fn byte_values_are_copied_unchanged() {
        let bin: &[u8] = &[0xff, 0xfe, b'$', b'(', b'X', b')'];
        let out = expand_bytes("<$(BIN)> $(NONE) $$", &|n| (n == "BIN").then_some(bin));
        let mut want = b"<".to_vec();
        want.extend_from_slice(bin);
        want.extend_from_slice(b"> $(NONE) $");
        assert_eq!(out, want);
    }
}
