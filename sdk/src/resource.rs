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
