//! Resource-vector arithmetic with Volcano's tolerance.

/// Volcano's `minResource`: amounts closer than this are equal.
pub const EPSILON: f64 = 0.1;

/// Index of the `pods` dimension in every snapshot.
pub const PODS: usize = 2;

/// `l ≤ r` in every dimension, with tolerance.
pub fn less_equal(l: &[f64], r: &[f64]) -> bool {
    l.iter().zip(r).all(|(a, b)| a < b || (a - b).abs() < EPSILON)
}

/// True when every dimension but `pods` is below [`EPSILON`].
pub fn is_empty(v: &[f64]) -> bool {
    v.iter().enumerate().all(|(d, x)| d == PODS || *x < EPSILON)
}

/// `x.round()` (half away from zero), exactly, without a call: in Wasm
/// `f64::round` is a libm function, and scoring rounds every node's amounts.
#[inline]
pub fn round(x: f64) -> f64 {
    // `x - trunc(x)` is exact, so the comparison decides like `round` does.
    let t = x.trunc();
    if (x - t).abs() >= 0.5 {
        t + 1f64.copysign(x)
    } else {
        t
    }
}

/// An amount of dimension `dim` in Volcano's internal units (cpu in
/// millicores, memory in bytes, other scalars in thousandths) as a person
/// writes it: `64`, `500m`, `1.5Gi`, `2`.
pub fn show(dim: &str, v: f64) -> String {
    let trim = |x: f64| {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    match dim {
        "memory" | "ephemeral-storage" => {
            let units = [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)];
            match units.iter().find(|(_, p)| v.abs() >= (1u64 << p) as f64) {
                Some((u, p)) => format!("{}{u}", trim(v / (1u64 << p) as f64)),
                None => trim(v),
            }
        }
        "cpu" if v.abs() < 1000.0 && v != 0.0 => format!("{}m", trim(v)),
        "pods" => trim(v),
        _ => trim(v / 1000.0),
    }
}

/// Adds `b` into `a`.
pub fn add(a: &mut [f64], b: &[f64]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
}

/// Subtracts `b` from `a`.
pub fn sub(a: &mut [f64], b: &[f64]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x -= y);
}

/// Volcano's `helpers.Share`: `x / total`, with `x / 0` = 1 if x > 0 else 0.
pub fn share(x: f64, total: f64) -> f64 {
    if total == 0.0 {
        if x > 0.0 {
            1.0
        } else {
            0.0
        }
    } else {
        x / total
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn amounts_read_as_written() {
        use super::show;
        assert_eq!(show("cpu", 64_000.0), "64");
        assert_eq!(show("cpu", 500.0), "500m");
        assert_eq!(show("cpu", 1_500.0), "1.5");
        assert_eq!(show("memory", 1073741824.0), "1Gi");
        assert_eq!(show("memory", 1.5 * 1073741824.0), "1.5Gi");
        assert_eq!(show("memory", 100.0), "100");
        assert_eq!(show("nvidia.com/gpu", 2_000.0), "2");
        assert_eq!(show("cpu", -2_000.0), "-2");
    }

    #[test]
    fn round_matches_std() {
        let halves = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 4503599627370495.5];
        let edges = [0.49999999999999994, 4503599627370497.0, 1e300, f64::INFINITY, f64::MIN_POSITIVE, 1999.9999];
        let mut xs: Vec<f64> = halves.iter().chain(&edges).flat_map(|&x| [x, -x]).collect();
        // A spread of amounts like the snapshot's (millicores, bytes, fractions).
        let mut x = 0.37_f64;
        for _ in 0..10_000 {
            x = (x * 7.919 + 0.123) % 1e7;
            xs.extend([x, -x, x.trunc() + 0.5, -(x.trunc() + 0.5)]);
        }
        for x in xs {
            assert_eq!(super::round(x).to_bits(), x.round().to_bits(), "round({x:e})");
        }
        assert!(super::round(f64::NAN).is_nan());
    }
}
