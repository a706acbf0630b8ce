//! Durations as annotations, config and plugin arguments write them.

/// A duration in ms: Go-style `1h30m`, `90s`, `250ms`, or plain seconds;
/// `None` when malformed, negative or longer than [`DURATION_MAX_MS`].
pub fn duration_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    // Past a year a duration is a typo, and past i64 it would wrap.
    let bounded = |ms: f64| (ms.is_finite() && (0.0..=DURATION_MAX_MS as f64).contains(&ms)).then(|| ms.round() as i64);
    if let Ok(secs) = s.parse::<f64>() {
        return bounded(secs * 1000.0);
    }
    let (mut total, mut rest) = (0.0, s);
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let value: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ms" => 1.0,
            "s" => 1e3,
            "m" => 60e3,
            "h" => 3600e3,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_end..];
    }
    bounded(total)
}

/// The longest duration [`duration_ms`] accepts: a year.
pub const DURATION_MAX_MS: i64 = 365 * 24 * 3600 * 1000;
