//! Pure parts of the `kubectl logs -f` latency benchmark (`tests/tests/e2e/bench_logs.rs`): the
//! guest job that prints lines stamped with their write time, the parser of a followed line,
//! and the percentiles of a set of delays.

use std::{fmt, path::Path};

use k8s_openapi::jiff::Timestamp;

/// The guest job: prints `ready`, waits for the file `go` (giving up with exit 1 after
/// 120 s, so a job whose test died does not wait forever), then prints `lines` lines
/// `<write time, µs since the epoch> <n>` on a fixed schedule of one per `period_us` (0: as
/// fast as the shell prints), and exits 0. The time is read in the `printf` that writes the
/// line; the launcher's `tee` copies it to the status share unbuffered.
pub fn job_script(go: &Path, lines: u32, period_us: u64) -> String {
    format!(
        r#"echo ready
give_up=$((EPOCHSECONDS + 120))
while [ ! -e '{go}' ]; do ((EPOCHSECONDS < give_up)) || exit 1; sleep 0.02; done
start=${{EPOCHREALTIME/[.,]/}}
for ((i = 1; i <= {lines}; i++)); do
  printf '%s %d\n' "${{EPOCHREALTIME/[.,]/}}" "$i"
  d=$((start + i * {period_us} - ${{EPOCHREALTIME/[.,]/}}))
  if ((d > 0)); then printf -v s '%d.%06d' $((d / 1000000)) $((d % 1000000)); sleep "$s"; fi
done"#,
        go = go.display()
    )
}

/// One job line as a follower printed it; times in µs since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub n: u32,
    /// When the job wrote it.
    pub write: i64,
    /// The CRI record's time: when the collector read it.
    pub record: i64,
    /// When the follower printed it.
    pub arrive: i64,
}

/// `<RFC 3339 record time> <write µs> <n>` → (record µs, write µs, n).
pub fn parse_stamped(line: &str) -> Option<(i64, i64, u32)> {
    let (time, rest) = line.split_once(' ')?;
    let record = time.parse::<Timestamp>().ok()?.as_microsecond();
    let (write, n) = rest.split_once(' ')?;
    Some((record, write.parse().ok()?, n.parse().ok()?))
}

/// Nearest-rank percentiles of a set of delays, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// `None` for no delays.
    pub fn of(delays_us: impl IntoIterator<Item = i64>) -> Option<Summary> {
        let mut v: Vec<i64> = delays_us.into_iter().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let rank = |q: f64| {
            let i = (q * v.len() as f64).ceil() as usize;
            v[i.clamp(1, v.len()) - 1] as f64 / 1000.0
        };
        Some(Summary {
            count: v.len(),
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            max: v[v.len() - 1] as f64 / 1000.0,
        })
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "n {:>4}  p50 {:>6.1}  p90 {:>6.1}  p99 {:>6.1}  max {:>6.1} ms",
            self.count, self.p50, self.p90, self.p99, self.max
        )
    }
}

#[cfg(test)]
mod tests;
