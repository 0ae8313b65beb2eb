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
