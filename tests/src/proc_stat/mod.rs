//! Fields of a `/proc/<pid>/stat` line, by their number in proc(5).

use std::str::FromStr;

/// Field `n` of a `/proc/<pid>/stat` line, numbered as proc(5) numbers them (3 = state,
/// 4 = ppid, 14/15 = utime/stime, 19 = nice). The command name (field 2) may hold spaces and
/// parentheses, so fields are counted after its last `)`; fields 1 and 2 are not served.
pub fn field(stat: &str, n: usize) -> Option<&str> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(n.checked_sub(3)?)
}

/// Field `n` parsed as a number.
pub fn number<T: FromStr>(stat: &str, n: usize) -> Option<T> {
    field(stat, n)?.parse().ok()
}

#[cfg(test)]
mod tests;
