//! Binpack: prefer the nodes a task leaves fullest, by a weighted mean of
//! per-resource utilisation (Volcano's `binpack` plugin, reference §8.10).

use tephra_sdk::resource::EPSILON;
use tephra_sdk::{log, Args, ExtensionPoint as P, Policy, Session};

/// Volcano's `MaxNodeScore`.
const MAX_NODE_SCORE: f64 = 100.0;

#[derive(Default)]
pub struct Binpack {
    /// `binpack.weight`. At 0 Volcano does not register the plugin; here every
    /// score is 0, which sums the same.
    weight: f64,
    /// (dimension, weight) of every weighted resource the snapshot has.
    dims: Vec<(usize, f64)>,
}

/// Volcano reads weights with `Arguments.GetInt`: a value that is not an
/// integer is ignored with a warning, keeping the default.
fn int_arg(args: &Args, key: &str, default: i64) -> i64 {
    let Some(v) = args.get(key) else {
        return default;
    };
    v.trim().parse().unwrap_or_else(|_| {
        log::warn(&format!("binpack: argument {key}: {v:?} is not an integer, using {default}"));
        default
    })
}

/// The part of Volcano's `BinPackingScore` that depends only on the task,
/// worked out once per call rather than per node.
struct Request {
    /// (dimension, weight, amount) of each weighted resource the task
    /// requests (amounts ≥ ε: Volcano scores only the request's `ResourceNames`).
    dims: Vec<(usize, f64, f64)>,
    /// Σ weights of those dimensions (with or without capacity on the node).
    weights: f64,
}

impl Request {
    fn new(dims: &[(usize, f64)], request: &[f64]) -> Self {
        let dims: Vec<(usize, f64, f64)> =
            dims.iter().filter(|&&(d, _)| request[d] >= EPSILON).map(|&(d, w)| (d, w, request[d])).collect();
        let weights = dims.iter().fold(0.0, |sum, &(_, w, _)| sum + w);
        Request { dims, weights }
    }

    /// One dimension's part of the sum, `None` when the task would not fit it.
    #[inline]
    fn part(&(d, w, r): &(usize, f64, f64), used: &[f64], allocatable: &[f64]) -> Option<f64> {
        // No capacity (or weight 0): scores 0, and is not checked for
        // overflow, but its weight still counts.
        if allocatable[d] == 0.0 || w == 0.0 {
            return Some(0.0);
        }
        let after = used[d] + r;
        if after > allocatable[d] {
            None
        } else {
            Some(after * w / allocatable[d])
        }
    }

    /// The score from the sum of the parts (`None`: the node scores 0).
    #[inline]
    fn finish(&self, weight: f64, sum: Option<f64>) -> f64 {
        let Some(mut sum) = sum else { return 0.0 };
        if self.weights > 0.0 {
            sum /= self.weights;
        }
        sum * MAX_NODE_SCORE * weight
    }

    /// Volcano's `BinPackingScore` of a node with rows `used` and `allocatable`.
    fn score(&self, weight: f64, used: &[f64], allocatable: &[f64]) -> f64 {
        let sum = self.dims.iter().try_fold(0.0, |sum, dim| Some(sum + Self::part(dim, used, allocatable)?));
        self.finish(weight, sum)
    }
}

impl Policy for Binpack {
    const NAME: &'static str = "binpack";
    const POINTS: &'static [P] = &[P::NodeOrder];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        self.weight = int_arg(args, "binpack.weight", 1) as f64;
        // Negative resource weights fall back to 1.
        let weight_of = |key: &str| match int_arg(args, key, 1) {
            w if w < 0 => 1,
            w => w,
        };
        let mut named: Vec<(&str, i64)> = Vec::new();
        let mut set = |name, w| match named.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 = w,
            None => named.push((name, w)),
        };
        let listed = args.get("binpack.resources").unwrap_or("");
        for name in listed.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            set(name, weight_of(&format!("binpack.resources.{name}")));
        }
        // Set last, so they override `cpu` or `memory` in binpack.resources.
        set("cpu", weight_of("binpack.cpu"));
        set("memory", weight_of("binpack.memory"));
        // A resource the snapshot lacks is requested by no task.
        self.dims = named.into_iter().filter_map(|(n, w)| Some((s.dim(n)?, w as f64))).collect();
        Ok(())
    }

    fn node_order(&mut self, s: &Session, task: u32, nodes: &[u32], scores: &mut [f64]) {
        if self.weight == 0.0 {
            scores.fill(0.0);
            return;
        }
        let request = Request::new(&self.dims, s.task_req(task));
        let weight = self.weight;
        let pairs = scores.iter_mut().zip(nodes);
        match request.dims[..] {
            // The usual request, cpu and memory, without a loop over them
            // (compiled to Wasm, a two-round loop costs more than its body),
            // read from the columns: the node's row is not sliced out.
            [a, b] => {
                let (used, alloc, d) = (&s.snap.node_used[..], &s.snap.node_allocatable[..], s.dims());
                pairs.for_each(|(score, &n)| {
                    let part = |(k, w, r): (usize, f64, f64)| {
                        let at = n as usize * d + k;
                        Request::part(&(at, w, r), used, alloc)
                    };
                    *score = request.finish(weight, part(a).zip(part(b)).map(|(x, y)| x + y));
                })
            }
            _ => pairs.for_each(|(score, &n)| *score = request.score(weight, s.node_used(n), s.node_allocatable(n))),
        }
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Binpack: node_order);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::{Runtime, SnapshotBuilder, TaskStatus, NONE};

    const GI: f64 = 1024.0 * 1024.0 * 1024.0;

    fn args(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn assert_scores(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "got {got:?}, want {want:?}");
        }
    }

    /// Conformance scenario `binpack-weights-case1` (Volcano's binpack_test.go TestNode).
    #[test]
    fn binpack_weights_case1() {
        let mut b = SnapshotBuilder::new(&["nvidia.com/gpu", "example.com/foo"]);
        let n1 = b.node(&[2000.0, 4.0 * GI, 10.0]);
        let n2 = b.node(&[4000.0, 16.0 * GI, 10.0, 4000.0]);
        let n3 = b.node(&[2000.0, 4.0 * GI, 10.0, 0.0, 16000.0]);
        let q = b.queue(1.0);
        let j = b.job(q, 0);
        // Pending with a node is Bound: p1 and p2 are in their nodes' `used`.
        let p1 = b.task(j, &[1000.0, GI], TaskStatus::Bound, n1);
        let p2 = b.task(j, &[1500.0, 0.0], TaskStatus::Bound, n3);
        let p3 = b.task(j, &[2000.0, 10.0 * GI, 0.0, 2000.0], TaskStatus::Pending, NONE);
        let p4 = b.task(j, &[3000.0, 4.0 * GI, 0.0, 0.0, 3000.0], TaskStatus::Pending, NONE);
        let mut rt = Runtime::<Binpack>::default();
        let a = args(&[
            ("binpack.weight", "10"),
            ("binpack.cpu", "2"),
            ("binpack.memory", "3"),
            ("binpack.resources", "nvidia.com/gpu, example.com/foo"),
            ("binpack.resources.nvidia.com/gpu", "7"),
            ("binpack.resources.example.com/foo", "8"),
        ]);
        rt.open_session(b.snap, a).unwrap();
        let nodes = [n1, n2, n3];
        assert_scores(&rt.node_order(p1, &nodes), &[700.0, 137.5, 0.0]);
        assert_scores(&rt.node_order(p2, &nodes), &[0.0, 375.0, 0.0]);
        assert_scores(&rt.node_order(p3, &nodes), &[0.0, 531.25, 0.0]);
        assert_scores(&rt.node_order(p4, &nodes), &[0.0, 173.076923076, 0.0]);
    }

    fn one_node(pairs: &[(&str, &str)], request: &[f64]) -> f64 {
        let mut b = SnapshotBuilder::new(&["nvidia.com/gpu"]);
        let n = b.node(&[4000.0, 4e9, 10.0, 0.0]);
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        b.task(j, &[1000.0, 1e9], TaskStatus::Running, n);
        let t = b.task(j, request, TaskStatus::Pending, NONE);
        let mut rt = Runtime::<Binpack>::default();
        rt.open_session(b.snap, args(pairs)).unwrap();
        rt.node_order(t, &[n])[0]
    }

    #[test]
    fn argument_quirks() {
        let req = [1000.0, 1e9];
        // Defaults: (2/4 + 2/4) / 2 * 100.
        assert_eq!(one_node(&[], &req), 50.0);
        assert_eq!(one_node(&[("binpack.weight", "0")], &req), 0.0);
        // Negative ⇒ 1; a non-integer is ignored (default 1). cpu 1/2, memory full.
        let tight = [1000.0, 3e9];
        assert_eq!(one_node(&[("binpack.cpu", "-3"), ("binpack.memory", "2.5")], &tight), 75.0);
        // binpack.cpu (default 1) overrides a `cpu` entry in binpack.resources.
        let listed = [("binpack.resources", "cpu"), ("binpack.resources.cpu", "9")];
        assert_eq!(one_node(&listed, &tight), 75.0);
        // Weight 0 adds nothing, not even to the weight sum.
        assert_eq!(one_node(&[("binpack.memory", "0")], &tight), 50.0);
        // Requested, weighted, absent on the node: scores 0 but its weight counts.
        let gpu = [("binpack.resources", "nvidia.com/gpu")];
        assert_eq!(one_node(&gpu, &[1000.0, 1e9, 0.0, 1000.0]), (0.5 + 0.5) / 3.0 * 100.0);
        // Amounts below ε are not requested at all.
        assert_eq!(one_node(&[], &[1000.0, 0.05]), 50.0);
        // Any overflowing dimension zeroes the node.
        assert_eq!(one_node(&[], &[3500.0, 1e9]), 0.0);
    }
}
