//! Resource quantities and dense resource vectors.
//!
//! Units follow Volcano: cpu in millicores, memory in bytes, `pods` in whole
//! pods, every other scalar in milli-units. A session lays resources out as
//! dense `f64` rows over a dimension table whose first three entries are
//! always `cpu`, `memory`, `pods`.

use std::collections::BTreeMap;

/// Volcano's `minResource`: amounts closer than this are equal.
pub const EPSILON: f64 = 0.1;
/// Index of the `pods` dimension.
pub const PODS: usize = 2;
/// The dimensions every session has, in order.
pub const BASE_DIMS: [&str; 3] = ["cpu", "memory", "pods"];

/// A sparse resource list in internal units, keyed by resource name.
pub type ResourceList = BTreeMap<String, f64>;

/// Parses a Kubernetes quantity ("500m", "1Gi", "2", "1e3") to its value.
pub fn parse_quantity(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let bad = || format!("invalid quantity {s:?}");
    if t.is_empty() {
        return Err(bad());
    }
    const SUFFIXES: [(&str, f64); 14] = [
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
    ];
    let (num, mult) = SUFFIXES
        .iter()
        .find(|(suf, _)| t.ends_with(suf) && !t.ends_with(&format!("e{suf}")))
        .map(|(suf, m)| (&t[..t.len() - suf.len()], *m))
        .unwrap_or((t, 1.0));
    let (num, mult) = match num.strip_suffix('E') {
        Some(n) if !n.is_empty() && mult == 1.0 => (n, 1e18),
        _ => (num, mult),
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    // Finite before and after the suffix ("1e300Ei" overflows).
    let v = v * mult;
    if !v.is_finite() {
        return Err(bad());
    }
    Ok(v)
}

/// Converts a quantity of resource `name` to Volcano's internal unit.
pub fn to_internal(name: &str, value: f64) -> f64 {
    match name {
        "memory" | "pods" => value,
        _ => value * 1000.0,
    }
}

/// Parses a quantity for resource `name` straight to internal units.
pub fn parse_resource(name: &str, s: &str) -> Result<f64, String> {
    parse_quantity(s).map(|v| to_internal(name, v))
}

/// Renders an internal amount the way a user writes it.
pub fn display(name: &str, v: f64) -> String {
    match name {
        "memory" => {
            let gi = v / 1073741824.0;
            if v == 0.0 {
                "0".into()
            } else if gi >= 1.0 && (gi - gi.round()).abs() < 1e-9 {
                format!("{}Gi", gi.round())
            } else if v >= 1048576.0 {
                format!("{:.0}Mi", v / 1048576.0)
            } else {
                format!("{v:.0}")
            }
        }
        "pods" => format!("{v:.0}"),
        _ => {
            if (v / 1000.0 - (v / 1000.0).round()).abs() < 1e-9 {
                format!("{}", (v / 1000.0).round())
            } else {
                format!("{v:.0}m")
            }
        }
    }
}

/// `l ≤ r` in every dimension, with tolerance.
#[inline]
pub fn less_equal(l: &[f64], r: &[f64]) -> bool {
    l.iter().zip(r).all(|(a, b)| a < b || (a - b).abs() < EPSILON)
}

/// First dimension where `l > r` (beyond tolerance).
#[inline]
pub fn first_exceeding(l: &[f64], r: &[f64]) -> Option<usize> {
    l.iter().zip(r).position(|(a, b)| !(a < b || (a - b).abs() < EPSILON))
}

/// True when every dimension but `pods` is below [`EPSILON`].
#[inline]
pub fn is_empty(v: &[f64]) -> bool {
    v.iter().enumerate().all(|(d, x)| d == PODS || *x < EPSILON)
}

/// `a += sign · b`.
#[inline]
pub fn add_scaled(a: &mut [f64], b: &[f64], sign: f64) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x += sign * y);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity("500m").unwrap(), 0.5);
        assert_eq!(parse_quantity("1Gi").unwrap(), 1073741824.0);
        assert_eq!(parse_quantity("1G").unwrap(), 1e9);
        assert_eq!(parse_quantity("1e3").unwrap(), 1000.0);
        assert_eq!(parse_quantity("2").unwrap(), 2.0);
        assert_eq!(parse_quantity("1.5k").unwrap(), 1500.0);
        assert!(parse_quantity("abc").is_err());
        assert!(parse_quantity("").is_err());
        assert_eq!(parse_resource("cpu", "2").unwrap(), 2000.0);
        assert_eq!(parse_resource("nvidia.com/gpu", "1").unwrap(), 1000.0);
        assert_eq!(parse_resource("pods", "110").unwrap(), 110.0);
    }

    #[test]
    fn tolerance() {
        assert!(less_equal(&[1000.05], &[1000.0]));
        assert!(!less_equal(&[1000.2], &[1000.0]));
        assert_eq!(first_exceeding(&[1.0, 5.0], &[1.0, 2.0]), Some(1));
        assert!(is_empty(&[0.0, 0.0, 1.0]));
    }
}
