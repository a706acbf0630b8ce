//! Capacity's resource arithmetic. Quota rows (capability, deserved,
//! guarantee, realCapability) remember which dimensions they name, because
//! Volcano's comparisons treat a missing scalar differently from a zero one
//! (reference §8.6); usage rows (allocated, requests) are plain slices where
//! a missing dimension is 0.
//!
//! Dimension 0 is cpu and 1 memory: Volcano keeps them as struct fields, so
//! they are always named. Every other dimension, `pods` included, is a
//! scalar that is named only when the spec lists it.

use tephra_sdk::resource::{self, EPSILON, PODS};
use tephra_sdk::types::Quantity;

const CPU: usize = 0;
const MEMORY: usize = 1;

/// cpu and memory are struct fields in Volcano: always present.
fn is_field(k: usize) -> bool {
    k == CPU || k == MEMORY
}

/// Volcano's `l ≤ r` with tolerance; `≤` rather than `<` so that two
/// infinite limits compare equal.
pub fn le_eps(l: f64, r: f64) -> bool {
    l <= r || (l - r).abs() < EPSILON
}

/// A quota row: values (0 where absent) and which scalars are named.
#[derive(Clone, Debug, PartialEq)]
pub struct Res {
    pub v: Vec<f64>,
    pub has: Vec<bool>,
}

impl Res {
    /// Volcano's `EmptyResource`: cpu and memory 0, no scalars.
    pub fn empty(d: usize) -> Self {
        Res { v: vec![0.0; d], has: (0..d).map(is_field).collect() }
    }

    /// A row naming every dimension (the cluster total).
    pub fn dense(v: &[f64]) -> Self {
        Res { v: v.to_vec(), has: vec![true; v.len()] }
    }

    /// One row per owner `0..n` from a sparse list, in one pass; also
    /// whether the list has any entry for each owner.
    pub fn rows(list: &[Quantity], n: usize, d: usize) -> (Vec<Res>, Vec<bool>) {
        let mut rows = vec![Res::empty(d); n];
        let mut listed = vec![false; n];
        for q in list.iter().filter(|q| (q.owner as usize) < n && (q.dim as usize) < d) {
            let r = &mut rows[q.owner as usize];
            r.v[q.dim as usize] = q.value;
            r.has[q.dim as usize] = true;
            listed[q.owner as usize] = true;
        }
        (rows, listed)
    }

    /// Row of infinities naming every dimension (the hierarchical root
    /// without a capability).
    pub fn infinite(d: usize) -> Self {
        Res { v: vec![f64::INFINITY; d], has: vec![true; d] }
    }

    /// Volcano's `IsEmpty`: every dimension but `pods` below ε.
    pub fn is_empty(&self) -> bool {
        resource::is_empty(&self.v)
    }

    /// `Add`: values add, names unite.
    pub fn add(&mut self, o: &Res) -> &mut Self {
        for k in 0..self.v.len() {
            self.v[k] += o.v[k];
            self.has[k] |= o.has[k];
        }
        self
    }

    /// `MinDimensionResource(cap, Infinity)`: cpu and memory always take the
    /// minimum; a scalar only where both rows name it (a scalar `cap` does
    /// not name is unlimited, one `self` does not name stays absent).
    pub fn min_dimension(&mut self, cap: &Res) -> &mut Self {
        for k in 0..self.v.len() {
            if is_field(k) || (self.has[k] && cap.has[k]) {
                self.v[k] = self.v[k].min(cap.v[k]);
            }
        }
        self
    }

    /// A row for status: named values, NaN for absent scalars.
    pub fn status_row(&self) -> Vec<f64> {
        self.v.iter().zip(&self.has).map(|(&x, &h)| if h { x } else { f64::NAN }).collect()
    }
}

/// `ExceededPart(l, r)`: per dimension `l − r` where positive. A scalar is
/// kept only where `l` exceeds `r` (absent counting as 0).
pub fn exceeded_part(l: &Res, r: &Res) -> Res {
    let d = l.v.len();
    let mut out = Res::empty(d);
    for k in 0..d {
        if l.v[k] > r.v[k] {
            out.v[k] = l.v[k] - r.v[k];
            out.has[k] = true;
        }
    }
    out
}

/// `helpers.Max(l, r)`: cpu and memory the larger; a scalar named by either
/// side with a non-negative value, the larger of those values.
pub fn max_of(l: &Res, r: &Res) -> Res {
    let d = l.v.len();
    let mut out = Res::empty(d);
    for k in 0..d {
        if is_field(k) {
            out.v[k] = l.v[k].max(r.v[k]);
            continue;
        }
        let ls = (l.has[k] && l.v[k] >= 0.0).then_some(l.v[k]);
        let rs = (r.has[k] && r.v[k] >= 0.0).then_some(r.v[k]);
        if let Some(x) = match (ls, rs) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        } {
            out.v[k] = x;
            out.has[k] = true;
        }
    }
    out
}

/// Capacity's queue share: 1 for a best-effort queue (empty deserved),
/// else the largest `allocated / deserved` over dimensions deserving ≥ ε
/// (`pods` included), never below 0.
pub fn share(allocated: &[f64], deserved: &Res) -> f64 {
    if deserved.is_empty() {
        return 1.0;
    }
    deserved
        .v
        .iter()
        .zip(allocated)
        .filter(|(d, _)| **d >= EPSILON)
        .map(|(d, a)| resource::share(*a, *d))
        .fold(0.0, f64::max)
}

/// `LessEqualWithDimensionAndResourcesName`: the dimensions (`pods` aside)
/// that `req` asks for and where `used` exceeds `limit` — exactly, without
/// tolerance, an absent limit counting as 0. Empty means it fits.
pub fn short_dims(used: &[f64], limit: &[f64], req: &[f64]) -> Vec<usize> {
    (0..req.len()).filter(|&k| k != PODS && req[k] > 0.0 && used[k] > limit[k]).collect()
}

/// `LessEqualPartlyWithDimensionZeroFiltered`: some dimension `req` asks for
/// (`pods` aside, and skipping those where both sides are below ε) has
/// `future ≤ deserved` (tolerance ε).
pub fn partly_within(future: &[f64], deserved: &[f64], req: &[f64]) -> bool {
    (0..req.len()).any(|k| {
        k != PODS && req[k] > 0.0 && !(future[k] < EPSILON && deserved[k] < EPSILON) && le_eps(future[k], deserved[k])
    })
}

/// `GreaterPartlyWithRelevantDimensions`: `allocated > deserved` (exact) on
/// some dimension `req` asks for that is relevant in `deserved` — cpu and
/// memory when they deserve ≥ ε, a scalar when deserved names it (even at
/// 0); `pods` never.
pub fn over_deserved(allocated: &[f64], deserved: &Res, req: &[f64]) -> bool {
    (0..req.len()).any(|k| {
        let relevant = if is_field(k) { deserved.v[k] >= EPSILON } else { k != PODS && deserved.has[k] };
        relevant && req[k] > 0.0 && allocated[k] > deserved.v[k]
    })
}

/// `guarantee.LessEqual(rest, Zero)`: what stays in the queue still covers
/// its guarantee on cpu, memory and every scalar the guarantee names.
pub fn keeps_guarantee(rest: &[f64], guarantee: &Res) -> bool {
    (0..rest.len()).all(|k| !guarantee.has[k] || le_eps(guarantee.v[k], rest[k]))
}

/// `parent.LessPartly(sum, Zero)`: the dimensions where the children's sum
/// exceeds the parent (a scalar only the sum names counts). Only logged.
pub fn below(parent: &Res, sum: &Res) -> Vec<usize> {
    (0..parent.v.len())
        .filter(|&k| if is_field(k) || parent.has[k] { parent.v[k] < sum.v[k] } else { sum.has[k] })
        .collect()
}

/// Volcano's `Intersection`: some dimension is ≥ ε on both sides; `pods`
/// counts only when `with_pods`.
pub fn intersects(a: &[f64], b: &[f64], with_pods: bool) -> bool {
    (0..a.len()).any(|k| (with_pods || k != PODS) && a[k] >= EPSILON && b[k] >= EPSILON)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPU: usize = 3;

    fn res(v: &[f64], has: &[bool]) -> Res {
        Res { v: v.to_vec(), has: has.to_vec() }
    }

    #[test]
    fn exceeded_part_keeps_scalars_only_where_left_exceeds() {
        let total = Res::dense(&[8000.0, 8e9, 110.0, 4000.0]);
        let g = res(&[2000.0, 0.0, 0.0, 4000.0], &[true, true, false, true]);
        let e = exceeded_part(&total, &g);
        assert_eq!(e.v, [6000.0, 8e9, 110.0, 0.0]);
        assert_eq!(e.has, [true, true, true, false]);
        // cpu never goes negative.
        let e = exceeded_part(&Res::dense(&[1000.0, 0.0, 0.0, 0.0]), &Res::dense(&[3000.0, 0.0, 0.0, 0.0]));
        assert_eq!(e.v[0], 0.0);
    }

    #[test]
    fn min_dimension_treats_unnamed_scalars_as_unlimited() {
        let mut real = res(&[6000.0, 8e9, 110.0, 0.0], &[true, true, true, false]);
        let cap = res(&[2000.0, 1e20, 0.0, 1000.0], &[true, true, false, true]);
        real.min_dimension(&cap);
        // gpu stays absent (cap names it, real does not); pods unlimited.
        assert_eq!(real.v, [2000.0, 8e9, 110.0, 0.0]);
        assert!(!real.has[GPU]);
        let mut deserved = res(&[1000.0, 0.0, 0.0, 2000.0], &[true, true, false, true]);
        deserved.min_dimension(&real);
        assert_eq!(deserved.v, [1000.0, 0.0, 0.0, 2000.0]);
    }

    #[test]
    fn max_unites_names_and_drops_negative_scalars() {
        let l = res(&[1000.0, 0.0, 0.0, -1.0], &[true, true, false, true]);
        let r = res(&[0.0, 5.0, 3.0, 0.0], &[true, true, true, false]);
        let m = max_of(&l, &r);
        assert_eq!(m.v, [1000.0, 5.0, 3.0, 0.0]);
        assert_eq!(m.has, [true, true, true, false]);
    }

    #[test]
    fn share_of_best_effort_queue_is_one() {
        assert_eq!(share(&[5000.0, 0.0, 3.0, 0.0], &Res::empty(4)), 1.0);
        assert_eq!(share(&[0.0; 4], &Res::empty(4)), 1.0);
        // A deserved row of only pods is still best-effort.
        assert_eq!(share(&[0.0; 4], &res(&[0.0, 0.0, 5.0, 0.0], &[true, true, true, false])), 1.0);
        let d = res(&[2000.0, 0.0, 4.0, 1000.0], &[true, true, true, true]);
        assert_eq!(share(&[1000.0, 9e9, 1.0, 1500.0], &d), 1.5);
        assert_eq!(share(&[1000.0, 9e9, 6.0, 0.0], &d), 1.5);
    }

    #[test]
    fn short_dims_checks_only_requested_dims_exactly() {
        let limit = [2000.0, 2e9, 1.0, 0.0];
        assert!(short_dims(&[2000.0, 3e9, 5.0, 0.0], &limit, &[1000.0, 0.0, 1.0, 0.0]).is_empty());
        assert_eq!(short_dims(&[2000.05, 3e9, 5.0, 0.0], &limit, &[1000.0, 1.0, 1.0, 0.0]), [0, 1]);
        assert_eq!(short_dims(&[0.0, 0.0, 1.0, 1.0], &limit, &[0.0, 0.0, 1.0, 1.0]), [GPU]);
    }

    #[test]
    fn partly_within_needs_one_dimension() {
        let deserved = [2000.0, 2e9, 0.0, 0.0];
        assert!(partly_within(&[2000.0, 4e9, 2.0, 0.0], &deserved, &[1000.0, 1e9, 1.0, 0.0]));
        assert!(!partly_within(&[2001.0, 4e9, 2.0, 0.0], &deserved, &[1000.0, 1e9, 1.0, 0.0]));
        // Tolerance ε.
        assert!(partly_within(&[2000.05, 4e9, 2.0, 0.0], &deserved, &[1000.0, 1e9, 1.0, 0.0]));
        // A dimension zero on both sides is no evidence.
        assert!(!partly_within(&[0.05, 0.0, 1.0, 0.0], &[0.0; 4], &[0.05, 0.0, 1.0, 0.0]));
    }

    #[test]
    fn over_deserved_uses_relevant_dimensions_only() {
        let gpu_only = res(&[0.0, 0.0, 0.0, 1000.0], &[true, true, false, true]);
        // cpu is not relevant (deserved < ε), gpu equal is not over.
        assert!(!over_deserved(&[4000.0, 4e9, 1.0, 1000.0], &gpu_only, &[4000.0, 4e9, 1.0, 1000.0]));
        assert!(over_deserved(&[4000.0, 4e9, 1.0, 1001.0], &gpu_only, &[0.0, 0.0, 1.0, 1.0]));
        // A scalar named at 0 is relevant.
        let gpu_zero = res(&[0.0; 4], &[true, true, false, true]);
        assert!(over_deserved(&[0.0, 0.0, 1.0, 1000.0], &gpu_zero, &[0.0, 0.0, 1.0, 1000.0]));
        // An unnamed scalar is not.
        assert!(!over_deserved(&[0.0, 0.0, 1.0, 1000.0], &Res::empty(4), &[0.0, 0.0, 1.0, 1000.0]));
    }

    #[test]
    fn guarantee_checks_fields_and_named_scalars() {
        let g = res(&[1000.0, 0.0, 0.0, 2000.0], &[true, true, false, true]);
        assert!(keeps_guarantee(&[1000.0, 0.0, -3.0, 2000.0], &g));
        assert!(!keeps_guarantee(&[999.0, 0.0, 0.0, 2000.0], &g));
        assert!(!keeps_guarantee(&[1000.0, 0.0, 0.0, 1000.0], &g));
    }

    #[test]
    fn intersection_with_and_without_pods() {
        assert!(!intersects(&[0.0, 4e9, 1.0, 0.0], &[1000.0, 0.0, 1.0, 1000.0], false));
        assert!(intersects(&[0.0, 4e9, 1.0, 0.0], &[1000.0, 0.0, 1.0, 1000.0], true));
        assert!(intersects(&[500.0, 0.0, 1.0, 0.0], &[1000.0, 0.0, 1.0, 0.0], false));
    }

    #[test]
    fn infinite_limits_compare_equal() {
        assert!(le_eps(f64::INFINITY, f64::INFINITY));
        assert!(!le_eps(f64::INFINITY, 1e300));
    }
}
