//! Proportion's water-filling: the cluster total is shared out over queue
//! weights, round by round, each queue capped by its request and real
//! capability and floored at its guarantee (reference §8.5). Volcano's quirks
//! are kept: all-zero weights stop before guarantees are applied, and a queue
//! whose deserved did not move in a round counts as met.

use tephra_sdk::resource::{self, EPSILON};

/// One queue's input to the water-filling. All rows have the total's length.
pub struct Claim<'a> {
    pub weight: f64,
    /// Per-dimension ceiling: realCapability, +∞ where Volcano leaves it unset.
    pub cap: &'a [f64],
    pub request: &'a [f64],
    pub guarantee: &'a [f64],
}

/// Safety net against a plugin that never returns; Volcano has no such bound
/// and real inputs settle within a few rounds.
const MAX_ROUNDS: usize = 10_000;

/// Each claim's deserved row, in `claims` order.
pub fn deserved(total: &[f64], claims: &[Claim]) -> Vec<Vec<f64>> {
    let d = total.len();
    let mut deserved = vec![vec![0.0; d]; claims.len()];
    let mut met = vec![false; claims.len()];
    let mut remaining = total.to_vec();
    for _ in 0..MAX_ROUNDS {
        // Volcano's weights are int32 ≥ 1; anything odd counts as zero.
        let weight = |c: &Claim| c.weight.max(0.0);
        let open: Vec<usize> = (0..claims.len()).filter(|&i| !met[i]).collect();
        let w: f64 = open.iter().map(|&i| weight(&claims[i])).sum();
        if w == 0.0 {
            break;
        }
        // Every queue of a round draws on the same `remaining`.
        let mut inc = vec![0.0; d];
        let mut dec = vec![0.0; d];
        for i in open {
            let c = &claims[i];
            let ratio = weight(c) / w;
            let old = std::mem::replace(&mut deserved[i], vec![0.0; d]);
            let new = &mut deserved[i];
            for k in 0..d {
                new[k] = (old[k] + remaining[k] * ratio).min(c.cap[k]).min(c.request[k]).max(c.guarantee[k]);
                if new[k] > old[k] {
                    inc[k] += new[k] - old[k];
                } else {
                    dec[k] += old[k] - new[k];
                }
            }
            // Met when the request is covered, or when capping kept the
            // deserved exactly where it was.
            met[i] = resource::less_equal(c.request, new) || *new == old;
        }
        let old_remaining = remaining.clone();
        for k in 0..d {
            remaining[k] = (remaining[k] + dec[k] - inc[k]).max(0.0);
        }
        if resource::is_empty(&remaining) || remaining == old_remaining {
            break;
        }
    }
    deserved
}

/// Volcano's queue share: the largest `allocated / deserved` over the
/// dimensions the queue deserves (≥ ε), `pods` included; 0 when none.
pub fn share(allocated: &[f64], deserved: &[f64]) -> f64 {
    deserved.iter().zip(allocated).filter(|(d, _)| **d >= EPSILON).map(|(d, a)| a / d).fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    fn claim<'a>(weight: f64, cap: &'a [f64], request: &'a [f64], guarantee: &'a [f64]) -> Claim<'a> {
        Claim { weight, cap, request, guarantee }
    }

    #[test]
    fn caps_by_request_and_real_capability() {
        let (none, zero) = ([INF; 3], [0.0; 3]);
        let small = [1000.0, 0.0, 0.0];
        let big = [10_000.0, 0.0, 0.0];
        let capped = [2000.0, INF, INF];
        let got = deserved(
            &[9000.0, 0.0, 0.0],
            &[claim(1.0, &none, &small, &zero), claim(1.0, &capped, &big, &zero), claim(1.0, &none, &big, &zero)],
        );
        // Round 1: 3000 each, q0 met at its request 1000, q1 capped at 2000.
        // Round 2: q1 unchanged (met), q2 4500. Round 3: q2 takes the rest.
        assert_eq!(got, vec![small.to_vec(), vec![2000.0, 0.0, 0.0], vec![6000.0, 0.0, 0.0]]);
    }

    #[test]
    fn guarantee_floors_deserved() {
        let none = [INF; 3];
        let g = [3000.0, 0.0, 0.0];
        let req = [1000.0, 0.0, 0.0];
        let other = [8000.0, 0.0, 0.0];
        let got = deserved(
            &[4000.0, 0.0, 0.0],
            &[claim(1.0, &none, &req, &g), claim(3.0, &[1000.0, INF, INF], &other, &[0.0; 3])],
        );
        // The floor applies even above the request.
        assert_eq!(got, vec![vec![3000.0, 0.0, 0.0], vec![1000.0, 0.0, 0.0]]);
    }

    #[test]
    fn all_zero_weights_leave_guarantee_unapplied() {
        let got = deserved(&[4000.0, 1e9, 10.0], &[claim(0.0, &[INF; 3], &[1000.0, 1e9, 1.0], &[500.0, 0.0, 0.0])]);
        assert_eq!(got, vec![vec![0.0; 3]]);
    }

    #[test]
    fn zero_weight_queue_next_to_weighted_one_gets_its_guarantee() {
        let none = [INF; 3];
        let req = [4000.0, 0.0, 0.0];
        let got = deserved(
            &[4000.0, 0.0, 0.0],
            &[claim(0.0, &none, &req, &[1000.0, 0.0, 0.0]), claim(1.0, &none, &req, &[0.0; 3])],
        );
        // Both draw on the same round's `remaining`: the guarantee comes on
        // top, so deserved rows may add up to more than the total.
        assert_eq!(got[0], vec![1000.0, 0.0, 0.0]);
        assert_eq!(got[1], vec![4000.0, 0.0, 0.0]);
    }

    #[test]
    fn share_is_max_ratio_over_deserved_dims() {
        assert_eq!(share(&[4000.0, 5.0, 2.0], &[1000.0, 0.0, 2.0]), 4.0);
        assert_eq!(share(&[4000.0, 5.0, 2.0], &[0.05, 0.0, 0.0]), 0.0);
    }
}
