use super::*;

fn s(text: &str) -> String {
    text.replace('$', "\u{a7}")
}

#[test]
fn headings_carry_numbers_only_at_their_start() {
    let md = s(
        "# Title\n## $1 Conventions\n### $1.4 Locks\n#### `config.json` ($1.1)\n\
                    text $2\n```\n## $9 in a fence\n```\n#$3 no space\n## $2.10. tart exec\n",
    );
    let got: Vec<String> = heading_numbers(&md).into_iter().collect();
    assert_eq!(got, ["1", "1.4", "2.10"]);
}

/// A file, its text and each mark's (file, section).
type Case = (&'static str, &'static str, &'static [Mark]);
type Mark = (Option<&'static str>, Option<&'static str>);

#[test]
fn marks_take_the_nearest_path_before_them_on_their_line() {
    let cases: &[Case] = &[
        (
            "a.rs",
            "// docs/reference/tart-cli.md $2.6, $3.2",
            &[
                (Some("docs/reference/tart-cli.md"), Some("2.6")),
                (Some("docs/reference/tart-cli.md"), Some("3.2")),
            ],
        ),
        (
            "a.rs",
            "// (docs/reference/a.md $1; docs/reference/b.md $5.2).",
            &[
                (Some("docs/reference/a.md"), Some("1")),
                (Some("docs/reference/b.md"), Some("5.2")),
            ],
        ),
        ("a.rs", "// bare ($1.4)", &[(None, Some("1.4"))]),
        ("a.rs", "// tart-cli.md $1.4", &[(None, Some("1.4"))]),
        ("a.rs", "// mydocs/x.md $1", &[(None, Some("1"))]),
        ("a.rs", "// $ alone", &[(None, None)]),
        (
            "docs/pods.md",
            "see $3.",
            &[(Some("docs/pods.md"), Some("3"))],
        ),
        (
            "docs/pods.md",
            "docs/reference/host-and-conventions.md $5.3",
            &[(Some("docs/reference/host-and-conventions.md"), Some("5.3"))],
        ),
        ("README.md", "see $3", &[(None, Some("3"))]),
    ];
    for (rel, text, want) in cases {
        let got: Vec<(Option<String>, Option<String>)> = cited(rel, &s(text))
            .into_iter()
            .map(|c| (c.file, c.section))
            .collect();
        let want: Vec<(Option<String>, Option<String>)> = want
            .iter()
            .map(|(f, n)| (f.map(str::to_string), n.map(str::to_string)))
            .collect();
        assert_eq!(got, want, "{rel}: {text}");
    }
}

#[test]
fn problems_name_the_line_and_the_reason() {
    let headings: BTreeMap<String, BTreeSet<String>> = [(
        "docs/reference/tart-cli.md".to_string(),
        ["1.4".to_string()].into_iter().collect(),
    )]
    .into_iter()
    .collect();
    let text = s("ok docs/reference/tart-cli.md $1.4\n\
                      gone docs/reference/tart-cli.md $1.5\n\
                      bare $1.4\n\
                      missing docs/reference/nope.md $1\n\
                      $\n");
    let got = problems("x.rs", &text, &headings);
    assert_eq!(got.len(), 4, "{got:#?}");
    assert!(got[0].starts_with("x.rs:2:") && got[0].contains("no heading"));
    assert!(got[1].starts_with("x.rs:3:") && got[1].contains("names no file"));
    assert!(got[2].starts_with("x.rs:4:") && got[2].contains("does not exist"));
    assert!(got[3].starts_with("x.rs:5:") && got[3].contains("without a section number"));
}
