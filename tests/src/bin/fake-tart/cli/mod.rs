//! Argument parsing the swift-argument-parser way (docs/reference/tart-cli.md §1.7): `--opt value`
//! and `--opt=value`, options and positionals interleaved (except `exec`,
//! docs/reference/tart-cli.md §2.10), parse errors as E4 with the subcommand's usage block (exit
//! 64). Pure: argv in, [`Parsed`] or [`Failure`] out.

use std::collections::BTreeMap;

use crate::error::Failure;

/// What a subcommand accepts.
pub(crate) struct Spec {
    pub name: &'static str,
    pub usage: &'static str,
    /// Positional argument names, e.g. `<name>`.
    pub positionals: &'static [&'static str],
    /// The last positional repeats (`delete <name> ...`).
    pub variadic: bool,
    /// Options taking a value: (long, short).
    pub options: &'static [(&'static str, Option<char>)],
    /// Boolean flags: (long, short).
    pub flags: &'static [(&'static str, Option<char>)],
}

/// The parsed command line of one subcommand.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Parsed {
    pub positionals: Vec<String>,
    pub options: BTreeMap<String, Vec<String>>,
    pub flags: Vec<String>,
}

impl Parsed {
    pub(crate) fn flag(&self, long: &str) -> bool {
        self.flags.iter().any(|f| f == long)
    }
    /// The last value of an option.
    pub(crate) fn opt(&self, long: &str) -> Option<&str> {
        self.options
            .get(long)
            .and_then(|v| v.last())
            .map(String::as_str)
    }
    pub(crate) fn opts(&self, long: &str) -> &[String] {
        self.options.get(long).map(Vec::as_slice).unwrap_or(&[])
    }
    /// An option parsed as a number; a bad value is an E4 usage error.
    pub(crate) fn num<T: std::str::FromStr>(
        &self,
        sub: &str,
        long: &str,
    ) -> Result<Option<T>, Failure> {
        match self.opt(long) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                Failure::usage(
                    sub,
                    format!(
                        "The value '{v}' is invalid for '--{long} <{}>'",
                        long.replace('-', "")
                    ),
                )
            }),
        }
    }
}

pub(crate) const SPECS: &[Spec] = &[
    Spec {
        name: "pull",
        usage: "tart pull <remote-name> [--insecure] [--concurrency <concurrency>]",
        positionals: &["<remote-name>"],
        variadic: false,
        options: &[("concurrency", None)],
        flags: &[("insecure", None), ("deduplicate", None)],
    },
    Spec {
        name: "clone",
        usage: "tart clone <source-name> <new-name> [--insecure] [--concurrency <concurrency>] [--prune-limit <prune-limit>]",
        positionals: &["<source-name>", "<new-name>"],
        variadic: false,
        options: &[("concurrency", None), ("prune-limit", None)],
        flags: &[("insecure", None), ("deduplicate", None), ("stacked", None)],
    },
    Spec {
        name: "set",
        usage: "tart set <name> [--cpu <cpu>] [--memory <memory>] [--display <display>] [--display-refit] [--random-mac] [--random-serial] [--disk <disk>] [--disk-size <disk-size>]",
        positionals: &["<name>"],
        variadic: false,
        options: &[
            ("cpu", None),
            ("memory", None),
            ("display", None),
            ("disk", None),
            ("disk-size", None),
        ],
        flags: &[
            ("display-refit", None),
            ("no-display-refit", None),
            ("random-mac", None),
            ("random-serial", None),
        ],
    },
    Spec {
        name: "get",
        usage: "tart get <name> [--format <format>]",
        positionals: &["<name>"],
        variadic: false,
        options: &[("format", None)],
        flags: &[],
    },
    Spec {
        name: "list",
        usage: "tart list [--source <source>] [--format <format>] [--quiet]",
        positionals: &[],
        variadic: false,
        options: &[("source", None), ("format", None)],
        flags: &[("quiet", Some('q'))],
    },
    Spec {
        name: "run",
        usage: "tart run <name> [--no-graphics] [--dir <dir> ...] [--disk <disk> ...] [--net-softnet] [--net-bridged <interface> ...] [--net-host] [--suspendable]",
        positionals: &["<name>"],
        variadic: false,
        options: &[
            ("dir", None),
            ("disk", None),
            ("net-bridged", None),
            ("net-softnet-allow", None),
            ("net-softnet-block", None),
            ("net-softnet-expose", None),
            ("net-softnet-control-fd", None),
            ("root-disk-opts", None),
            ("rosetta", None),
            ("serial-path", None),
            ("provisioning-opts", None),
        ],
        flags: &[
            ("no-graphics", None),
            ("graphics", None),
            ("net-softnet", None),
            ("net-host", None),
            ("suspendable", None),
            ("recovery", None),
            ("vnc", None),
            ("vnc-experimental", None),
            ("serial", None),
            ("no-audio", None),
            ("no-clipboard", None),
            ("no-trackpad", None),
            ("no-pointer", None),
            ("no-keyboard", None),
            ("capture-system-keys", None),
            ("nested", None),
        ],
    },
    Spec {
        name: "stop",
        usage: "tart stop <name> [--timeout <timeout>]",
        positionals: &["<name>"],
        variadic: false,
        options: &[("timeout", Some('t'))],
        flags: &[],
    },
    Spec {
        name: "suspend",
        usage: "tart suspend <name>",
        positionals: &["<name>"],
        variadic: false,
        options: &[],
        flags: &[],
    },
    Spec {
        name: "delete",
        usage: "tart delete <name> ...",
        positionals: &["<name>"],
        variadic: true,
        options: &[],
        flags: &[],
    },
    Spec {
        name: "ip",
        usage: "tart ip <name> [--wait <wait>] [--resolver <resolver>]",
        positionals: &["<name>"],
        variadic: false,
        options: &[("wait", None), ("resolver", None)],
        flags: &[],
    },
    Spec {
        name: "prune",
        usage: "tart prune [--entries <entries>] [--older-than <n>] [--space-budget <n>]",
        positionals: &[],
        variadic: false,
        options: &[
            ("entries", None),
            ("older-than", None),
            ("space-budget", None),
            ("cache-budget", None),
        ],
        flags: &[("gc", None)],
    },
    Spec {
        name: "exec",
        usage: "tart exec [-i] [-t] <name> <command> ...",
        positionals: &["<name>", "<command>"],
        variadic: true,
        options: &[],
        flags: &[("interactive", Some('i')), ("tty", Some('t'))],
    },
];

pub(crate) fn spec(sub: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == sub)
}

/// The two-line usage block printed after a parse error of `sub`.
pub(crate) fn usage_block(sub: &str) -> String {
    let usage = spec(sub).map(|s| s.usage).unwrap_or("tart <subcommand>");
    format!("Usage: {usage}\n  See 'tart {sub} --help' for more information.")
}

/// Whether `args` asks for help (`--help`/`-h` before any `exec` passthrough).
pub(crate) fn wants_help(spec: &Spec, args: &[String]) -> bool {
    for a in args {
        if a == "--help" || a == "-h" {
            return true;
        }
        if spec.name == "exec" && !a.starts_with('-') {
            return false;
        }
    }
    false
}

/// Parses the arguments after the subcommand name.
pub(crate) fn parse(spec: &Spec, args: &[String]) -> Result<Parsed, Failure> {
    let sub = spec.name;
    let mut out = Parsed::default();
    let mut i = 0;
    let mut only_positionals = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        // exec: everything from the VM name on is passed through as-is
        // (docs/reference/tart-cli.md §2.10).
        let passthrough = spec.name == "exec" && !out.positionals.is_empty();
        if only_positionals || passthrough || a == "-" || !a.starts_with('-') {
            out.positionals.push(a.clone());
            continue;
        }
        if a == "--" {
            only_positionals = true;
            continue;
        }
        let (name, inline): (String, Option<String>) = if let Some(long) = a.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            }
        } else {
            let c = a.chars().nth(1).unwrap_or('-');
            let long = spec
                .options
                .iter()
                .chain(spec.flags)
                .find(|(_, s)| *s == Some(c))
                .map(|(l, _)| l.to_string());
            match long {
                Some(l) if a.len() == 2 => (l, None),
                _ => return Err(Failure::usage(sub, format!("Unknown option '{a}'"))),
            }
        };
        if spec.flags.iter().any(|(l, _)| *l == name) {
            out.flags.push(name);
        } else if spec.options.iter().any(|(l, _)| *l == name) {
            let value = match inline {
                Some(v) => v,
                None if i < args.len() => {
                    i += 1;
                    args[i - 1].clone()
                }
                None => {
                    return Err(Failure::usage(
                        sub,
                        format!("Missing value for '--{name} <{}>'", name.replace('-', "")),
                    ));
                }
            };
            out.options.entry(name).or_default().push(value);
        } else {
            return Err(Failure::usage(sub, format!("Unknown option '{a}'")));
        }
    }
    if out.positionals.len() < spec.positionals.len() {
        let missing = spec.positionals[out.positionals.len()];
        return Err(Failure::usage(
            sub,
            format!("Missing expected argument '{missing}'"),
        ));
    }
    if !spec.variadic && out.positionals.len() > spec.positionals.len() {
        let extra = &out.positionals[spec.positionals.len()];
        return Err(Failure::usage(
            sub,
            format!("Unexpected argument '{extra}'"),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
