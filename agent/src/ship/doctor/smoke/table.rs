//! The self-test's report: a kubectl-like table (STEP, RESULT, TIME, DETAIL), or one JSON
//! object per step. Pure.

use std::time::Duration;

use super::steps::Report;

/// Columns are as wide as their widest cell, three spaces apart, like `kubectl get`; DETAIL is
/// last and not padded.
pub(crate) fn render(reports: &[Report]) -> String {
    let rows: Vec<[String; 4]> = reports
        .iter()
        .map(|r| {
            [
                r.step.as_str().to_owned(),
                r.outcome.as_str().to_owned(),
                duration(r.took),
                r.detail.clone(),
            ]
        })
        .collect();
    let header = ["STEP", "RESULT", "TIME", "DETAIL"].map(str::to_owned);
    let mut widths = [0usize; 3];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (w, cell) in widths.iter().zip(row) {
            line.push_str(&format!("{cell:<w$}   "));
        }
        line.push_str(&row[3]);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// One JSON object per step, for `--json`.
pub(crate) fn json_lines(reports: &[Report]) -> String {
    reports
        .iter()
        .map(|r| {
            let v = serde_json::json!({
                "step": r.step.as_str(),
                "result": r.outcome.as_str(),
                "seconds": r.took.as_secs_f64(),
                "detail": r.detail,
            });
            format!("{v}\n")
        })
        .collect()
}

/// kubectl's short durations: `850ms`, `12.3s`, `2m5s`, `1h2m`.
pub(crate) fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    let s = d.as_secs();
    match () {
        () if ms < 1000 => format!("{ms}ms"),
        () if s < 60 => format!("{:.1}s", d.as_secs_f64()),
        () if s < 3600 => format!("{}m{}s", s / 60, s % 60),
        () => format!("{}h{}m", s / 3600, s % 3600 / 60),
    }
}
