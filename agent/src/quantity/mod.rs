//! Kubernetes resource quantities (`500m`, `1.5Gi`, `4G`, `129e6`): the one parser, used for
//! Pod resources, Node allocatable and byte sizes in the configuration.

/// Parse a Kubernetes quantity and return `value × scale`, rounded up to an integer.
/// `scale` is 1000 for cpu (result in millicores) and 1 for bytes.
///
/// Accepts `<decimal>[suffix]` with binary (`Ki`..`Ei`) or decimal (`n u m k M G T P E`)
/// suffixes, or an `e`/`E` exponent. Negative values and overflow give `None`.
pub(crate) fn parse_scaled(s: &str, scale: u128) -> Option<u128> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let num = num.strip_prefix('+').unwrap_or(num);
    if num.is_empty() || num == "." {
        return None;
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // value = digits / 10^frac_len × mult_num / mult_den × scale
    let digits: u128 = format!("{int}{frac}").parse().ok()?;
    let mut den: u128 = 10u128.checked_pow(u32::try_from(frac.len()).ok()?)?;
    let mut mul: u128 = scale;
    match suffix {
        "" => {}
        "Ki" => mul = mul.checked_mul(1 << 10)?,
        "Mi" => mul = mul.checked_mul(1 << 20)?,
        "Gi" => mul = mul.checked_mul(1 << 30)?,
        "Ti" => mul = mul.checked_mul(1 << 40)?,
        "Pi" => mul = mul.checked_mul(1 << 50)?,
        "Ei" => mul = mul.checked_mul(1 << 60)?,
        "n" => den = den.checked_mul(1_000_000_000)?,
        "u" => den = den.checked_mul(1_000_000)?,
        "m" => den = den.checked_mul(1000)?,
        "k" => mul = mul.checked_mul(1000)?,
        "M" => mul = mul.checked_mul(1_000_000)?,
        "G" => mul = mul.checked_mul(1_000_000_000)?,
        "T" => mul = mul.checked_mul(1_000_000_000_000)?,
        "P" => mul = mul.checked_mul(1_000_000_000_000_000)?,
        "E" => mul = mul.checked_mul(1_000_000_000_000_000_000)?,
        e if e.starts_with(['e', 'E']) => {
            let exp: i32 = e[1..].parse().ok()?;
            let p = 10u128.checked_pow(exp.unsigned_abs())?;
            if exp >= 0 {
                mul = mul.checked_mul(p)?;
            } else {
                den = den.checked_mul(p)?;
            }
        }
        _ => return None,
    }
    digits.checked_mul(mul).map(|n| n.div_ceil(den))
}

/// A byte quantity as `u64` (`512Mi`, `4Gi`, `500M`, `1073741824`).
pub(crate) fn parse_bytes(s: &str) -> Option<u64> {
    parse_scaled(s, 1).and_then(|v| u64::try_from(v).ok())
}

#[cfg(test)]
mod tests;
