//! Pure parsers for the value syntaxes the configuration accepts: durations (`10s`, `5m`),
//! Kubernetes-style byte quantities (`4Gi`, `500M`), disk thresholds (`10%` or a quantity),
//! `key=value` labels and `key=value:Effect` taints. No I/O; every error says what was wrong.

use std::time::Duration;

/// Parse `500ms`, `10s`, `5m`, `2h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (use e.g. 500ms, 10s, 5m, 2h)"))?;
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "" | "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        _ => {
            return Err(format!(
                "{s:?} has unknown duration unit {unit:?} (ms, s, m or h)"
            ));
        }
    };
    Ok(d)
}

/// Render a duration the way [`parse_duration`] reads it back (for `--help` defaults and logs).
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(3_600_000) && ms > 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Parse a byte quantity: `1073741824`, `512Mi`, `4Gi`, `1Ti`, `500M`, `2G` (Kubernetes
/// quantity syntax, [`crate::quantity`]).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
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
pub enum DiskThreshold {
    /// Percentage of the volume's total size (0 < p < 100).
    Percent(f64),
    /// Absolute free bytes.
    Bytes(u64),
}

impl DiskThreshold {
    /// Bytes of free space below which there is pressure, for a volume of `total` bytes.
    pub fn min_free(self, total: u64) -> u64 {
        match self {
            DiskThreshold::Percent(p) => (total as f64 * p / 100.0) as u64,
            DiskThreshold::Bytes(b) => b,
        }
    }
}

/// Parse `10%` or a byte quantity.
pub fn parse_disk_threshold(s: &str) -> Result<DiskThreshold, String> {
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
pub fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty() || p.len() > 253 || !is_dns_subdomain(p))
    {
        return Err(format!("label key {key:?} has an invalid prefix {p:?}"));
    }
    validate_label_value(name)
        .and_then(|()| {
            if name.is_empty() {
                Err(String::new())
            } else {
                Ok(())
            }
        })
        .map_err(|_| format!("label key {key:?} has an invalid name part {name:?}"))
}

/// Check a label value: empty, or ≤ 63 chars, alphanumeric at both ends, `-_.` inside.
pub fn validate_label_value(v: &str) -> Result<(), String> {
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
pub fn is_dns_subdomain(s: &str) -> bool {
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

/// Parse `key=value`.
pub fn parse_label(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("label {s:?} is not key=value"))?;
    validate_label_key(k)?;
    validate_label_value(v)?;
    Ok((k.to_owned(), v.to_owned()))
}

/// A Node taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaintSpec {
    /// Key.
    pub key: String,
    /// Value (may be empty).
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// Parse `key=value:Effect` or `key:Effect`.
pub fn parse_taint(s: &str) -> Result<TaintSpec, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_round_trip() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("m").is_err());
        for d in ["40s", "5m", "2h", "1500ms"] {
            assert_eq!(fmt_duration(parse_duration(d).unwrap()), d);
        }
    }

    #[test]
    fn byte_quantities_use_kubernetes_suffixes() {
        assert_eq!(parse_bytes("4Gi"), Ok(4 << 30));
        assert_eq!(parse_bytes("500M"), Ok(500_000_000));
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert!(parse_bytes("4GB").unwrap_err().contains("suffix"));
        assert_eq!(parse_bytes("1.5Ki"), Ok(1536));
        assert!(
            parse_bytes("99999999999Pi")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn disk_threshold_is_percent_or_bytes() {
        assert_eq!(
            parse_disk_threshold("10%"),
            Ok(DiskThreshold::Percent(10.0))
        );
        assert_eq!(
            parse_disk_threshold("50Gi"),
            Ok(DiskThreshold::Bytes(50 << 30))
        );
        assert!(parse_disk_threshold("100%").is_err());
        assert_eq!(DiskThreshold::Percent(10.0).min_free(1000), 100);
    }

    #[test]
    fn labels_and_taints_are_validated() {
        assert_eq!(
            parse_label("tart.run/pool=ci-1"),
            Ok(("tart.run/pool".into(), "ci-1".into()))
        );
        assert!(parse_label("nokv").is_err());
        assert!(parse_label("Bad_Prefix/x=1").is_err());
        assert!(parse_label("a=-bad").is_err());
        let t = parse_taint("virtual-kubelet.io/provider=tart:NoSchedule").unwrap();
        assert_eq!(
            (t.key.as_str(), t.value.as_str()),
            ("virtual-kubelet.io/provider", "tart")
        );
        assert_eq!(parse_taint("dedicated:NoExecute").unwrap().value, "");
        assert!(parse_taint("a=b:Sometimes").unwrap_err().contains("effect"));
    }
}
