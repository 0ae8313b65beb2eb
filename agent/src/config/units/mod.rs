//! Pure parsers for the value syntaxes the configuration accepts: durations (`10s`, `5m`),
//! Kubernetes-style byte quantities (`4Gi`, `500M`), disk thresholds (`10%` or a quantity),
//! label keys and values, `key=value:Effect` taints and `X.Y.Z` versions. No I/O; every error
//! says what was wrong. Turning them into clap and TOML values is the `values` module's job.

use std::time::Duration;

/// The longest duration any setting accepts. Far past every sensible setting, and small
/// enough that adding it to an `Instant` cannot overflow.
const MAX_DURATION: Duration = Duration::from_secs(8760 * 3600);

/// Parse `500ms`, `10s`, `5m`, `2h` or a bare number of seconds, at most [`MAX_DURATION`]
/// (8760h, a year).
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let too_large = || format!("{s:?} is too large a duration (at most 8760h)");
    let n: u64 = num.parse().map_err(|e: std::num::ParseIntError| {
        if *e.kind() == std::num::IntErrorKind::PosOverflow {
            too_large()
        } else {
            format!("{s:?} is not a duration (use e.g. 500ms, 10s, 5m, 2h)")
        }
    })?;
    let d = match unit {
        "ms" => Some(Duration::from_millis(n)),
        "" | "s" => Some(Duration::from_secs(n)),
        "m" => n.checked_mul(60).map(Duration::from_secs),
        "h" => n.checked_mul(3600).map(Duration::from_secs),
        _ => {
            return Err(format!(
                "{s:?} has unknown duration unit {unit:?} (ms, s, m or h)"
            ));
        }
    };
    d.filter(|d| *d <= MAX_DURATION).ok_or_else(too_large)
}

/// Parse a byte quantity: `1073741824`, `512Mi`, `4Gi`, `1Ti`, `500M`, `2G` (Kubernetes
/// quantity syntax, [`crate::quantity`]).
pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    crate::quantity::parse_bytes(s).ok_or_else(|| {
        if crate::quantity::parse_scaled(s, 1).is_some() {
            format!("{s:?} is too large")
        } else {
            format!("{s:?} is not a byte quantity: a number with a Kubernetes suffix such as 4Gi, 512Mi, 500M")
        }
    })
}

/// Free-space threshold under which the `TART_HOME` volume is under disk pressure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum DiskThreshold {
    /// Percentage of the volume's total size (0 < p < 100).
    Percent(f64),
    /// Absolute free bytes.
    Bytes(u64),
}

impl DiskThreshold {
    /// Bytes of free space below which there is pressure, for a volume of `total` bytes.
    pub(crate) fn min_free(self, total: u64) -> u64 {
        match self {
            DiskThreshold::Percent(p) => (total as f64 * p / 100.0) as u64,
            DiskThreshold::Bytes(b) => b,
        }
    }
}

/// Parse `10%` or a byte quantity.
pub(crate) fn parse_disk_threshold(s: &str) -> Result<DiskThreshold, String> {
    let s = s.trim();
    if let Some(p) = s.strip_suffix('%') {
        let p: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} is not a percentage"))?;
        if !(p > 0.0 && p < 100.0) {
            return Err(format!("{s:?} must be between 0% and 100% (exclusive)"));
        }
        return Ok(DiskThreshold::Percent(p));
    }
    parse_bytes(s).map(DiskThreshold::Bytes)
}

/// Check a label key: optional DNS-subdomain prefix (≤ 253) + `/` + name (≤ 63, alphanumeric
/// ends, `-_.` inside).
pub(crate) fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty() || p.len() > 253 || !is_dns_subdomain(p))
    {
        return Err(format!("label key {key:?} has an invalid prefix {p:?}"));
    }
    if name.is_empty() || validate_label_value(name).is_err() {
        return Err(format!(
            "label key {key:?} has an invalid name part {name:?}"
        ));
    }
    Ok(())
}

/// Check a label value: empty, or ≤ 63 chars, alphanumeric at both ends, `-_.` inside.
pub(crate) fn validate_label_value(v: &str) -> Result<(), String> {
    let ok = v.is_empty()
        || (v.len() <= 63
            && v.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && v.chars().last().is_some_and(|c| c.is_ascii_alphanumeric())
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "label value {v:?} is invalid (at most 63 characters [A-Za-z0-9._-], alphanumeric at both ends)"
        ))
    }
}

/// RFC 1123 subdomain: lowercase alphanumerics, `-` and `.`, alphanumeric at both ends.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part.len() <= 63
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        })
}

/// Parse `key=value` with a valid label key and value.
pub(crate) fn parse_label(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("label {s:?} is not key=value"))?;
    validate_label_key(k)?;
    validate_label_value(v)?;
    Ok((k.to_owned(), v.to_owned()))
}

/// A Node taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaintSpec {
    /// A label key.
    pub key: String,
    /// A label value; may be empty.
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// Parse `key=value:Effect` or `key:Effect`.
pub(crate) fn parse_taint(s: &str) -> Result<TaintSpec, String> {
    let (kv, effect) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("taint {s:?} is not key=value:Effect"))?;
    if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        return Err(format!(
            "taint {s:?} has effect {effect:?}; use NoSchedule, PreferNoSchedule or NoExecute"
        ));
    }
    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
    validate_label_key(key).map_err(|e| format!("taint {s:?}: {e}"))?;
    validate_label_value(value).map_err(|e| format!("taint {s:?}: {e}"))?;
    Ok(TaintSpec {
        key: key.into(),
        value: value.into(),
        effect: effect.into(),
    })
}

/// `2.35.0` -> `(2, 35, 0)`; anything but three dot-separated numbers is `None`.
pub(crate) fn parse_semver(s: &str) -> Option<(u32, u32, u32)> {
    let mut it = s.trim().split('.').map(|p| p.parse::<u32>().ok());
    let v = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(v)
}

#[cfg(test)]
mod tests;
