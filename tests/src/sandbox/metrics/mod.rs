//! Reading the agents' `/metrics` (OpenMetrics text) for the sandbox report: samples, summed
//! histograms across agents, and `histogram_quantile`-style percentile estimates. Pure.

use std::collections::BTreeMap;

/// One sample line: metric name, labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Full sample name, e.g. `tart_kubelet_vm_boot_duration_seconds_bucket`.
    pub name: String,
    /// Labels in order of appearance.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    /// The value of label `k`.
    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses exposition text; comment lines and malformed lines are skipped.
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, rest) = match line.find(['{', ' ']) {
        Some(i) => line.split_at(i),
        None => return None,
    };
    let (labels, rest) = if let Some(body) = rest.strip_prefix('{') {
        let end = find_label_end(body)?;
        (parse_labels(&body[..end])?, &body[end + 1..])
    } else {
        (Vec::new(), rest)
    };
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

fn find_label_end(body: &str) -> Option<usize> {
    let mut in_str = false;
    let mut esc = false;
    for (i, c) in body.char_indices() {
        match (in_str, esc, c) {
            (true, true, _) => esc = false,
            (true, false, '\\') => esc = true,
            (true, false, '"') => in_str = false,
            (false, _, '"') => in_str = true,
            (false, _, '}') => return Some(i),
            _ => {}
        }
    }
    None
}

fn parse_labels(body: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let eq = rest.find('=')?;
        let key = rest[..eq].trim().trim_start_matches(',').trim().to_string();
        let after = rest[eq + 1..].trim_start().strip_prefix('"')?;
        let mut val = String::new();
        let mut chars = after.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, n)) = chars.next() {
                        val.push(match n {
                            'n' => '\n',
                            other => other,
                        });
                    }
                }
                '"' => {
                    end = Some(i);
                    break;
                }
                c => val.push(c),
            }
        }
        out.push((key, val));
        rest = after[end? + 1..]
            .trim_start()
            .trim_start_matches(',')
            .trim_start();
    }
    Some(out)
}

/// A cumulative histogram: upper bounds with cumulative counts, plus sum and count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// `le` -> cumulative count, ascending; includes `+Inf`.
    pub buckets: BTreeMap<OrderedF64, f64>,
    /// `_sum`.
    pub sum: f64,
    /// `_count`.
    pub count: f64,
}

/// `f64` with a total order, for bucket bounds.
#[derive(Debug, Clone, Copy)]
pub struct OrderedF64(pub f64);
impl PartialEq for OrderedF64 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for OrderedF64 {}
impl PartialOrd for OrderedF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrderedF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Histogram {
    /// Sums the histogram `name` over every sample set whose labels match `filter`
    /// (`le` is ignored when matching), across all given scrapes.
    pub fn collect<'a>(
        scrapes: impl IntoIterator<Item = &'a [Sample]>,
        name: &str,
        filter: &[(&str, &str)],
    ) -> Histogram {
        let mut h = Histogram::default();
        let matches = |s: &Sample| filter.iter().all(|(k, v)| s.label(k) == Some(*v));
        for samples in scrapes {
            for s in samples.iter().filter(|s| matches(s)) {
                if s.name == format!("{name}_bucket") {
                    if let Some(le) = s.label("le") {
                        let le = if le == "+Inf" {
                            f64::INFINITY
                        } else {
                            le.parse().unwrap_or(f64::NAN)
                        };
                        *h.buckets.entry(OrderedF64(le)).or_default() += s.value;
                    }
                } else if s.name == format!("{name}_sum") {
                    h.sum += s.value;
                } else if s.name == format!("{name}_count") {
                    h.count += s.value;
                }
            }
        }
        h
    }

    /// Estimates quantile `q` (0..=1) like PromQL's `histogram_quantile`: linear interpolation
    /// inside the bucket that holds the rank; `None` when empty. A rank in the `+Inf` bucket
    /// returns the highest finite bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.buckets.values().last().copied().unwrap_or(0.0);
        if total <= 0.0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total;
        let mut prev_bound = 0.0;
        let mut prev_count = 0.0;
        for (OrderedF64(bound), &count) in &self.buckets {
            if count >= rank {
                if bound.is_infinite() {
                    return Some(prev_bound);
                }
                let in_bucket = count - prev_count;
                if in_bucket <= 0.0 {
                    return Some(*bound);
                }
                return Some(prev_bound + (bound - prev_bound) * (rank - prev_count) / in_bucket);
            }
            prev_bound = *bound;
            prev_count = count;
        }
        Some(prev_bound)
    }

    /// Mean, `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }
}

/// Sum of a counter or gauge `name` over matching samples across scrapes.
pub fn sum<'a>(
    scrapes: impl IntoIterator<Item = &'a [Sample]>,
    name: &str,
    filter: &[(&str, &str)],
) -> f64 {
    scrapes
        .into_iter()
        .flat_map(|s| s.iter())
        .filter(|s| s.name == name && filter.iter().all(|(k, v)| s.label(k) == Some(*v)))
        .map(|s| s.value)
        .sum()
}

#[cfg(test)]
mod tests;
