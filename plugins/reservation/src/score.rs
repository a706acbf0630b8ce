//! The score of a node set (the select module says why
//! each term is normalised by its largest value) and the running sums it is
//! computed from.

/// One candidate node, already scalarised where the score needs a scalar.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Allocatable in each requested dimension.
    pub alloc: Vec<f64>,
    /// The queue's usage on the node (scalar share).
    pub used: f64,
    /// Idle resources on the node (scalar share).
    pub idle: f64,
}

/// What to reserve.
#[derive(Clone, Debug)]
pub struct Request {
    /// The target amount per requested dimension.
    pub target: Vec<f64>,
    /// The cluster total per requested dimension (the share denominators).
    pub total: Vec<f64>,
    /// `Some(k)`: exactly k nodes (percentage mode), the surplus is then the
    /// distance from the target; `None`: a cover of the target.
    pub count: Option<usize>,
    /// The largest surplus, usage, node count and idle any set can have.
    pub(crate) max: [f64; 4],
}

/// Running sums of a node set.
#[derive(Clone, Debug)]
pub(crate) struct Sums {
    pub(crate) alloc: Vec<f64>,
    pub(crate) used: f64,
    pub(crate) idle: f64,
    pub(crate) n: usize,
}

impl Sums {
    pub(crate) fn new(d: usize) -> Self {
        Sums { alloc: vec![0.0; d], used: 0.0, idle: 0.0, n: 0 }
    }
    pub(crate) fn add(&mut self, c: &Candidate, sign: f64) {
        for (a, x) in self.alloc.iter_mut().zip(&c.alloc) {
            *a += sign * x;
        }
        self.used += sign * c.used;
        self.idle += sign * c.idle;
        self.n = (self.n as isize + sign as isize) as usize;
    }
}

impl Request {
    /// A request over `cands`, the candidates it will be scored against.
    pub fn new(target: Vec<f64>, total: Vec<f64>, count: Option<usize>, cands: &[Candidate]) -> Self {
        let mut r = Request { target, total, count, max: [0.0; 4] };
        let mut all = Sums::new(r.target.len());
        cands.iter().for_each(|c| all.add(c, 1.0));
        let reach = r.surplus(&all).max(r.surplus(&Sums::new(r.target.len())));
        r.max = [reach, all.used, all.n as f64, all.idle];
        r
    }

    /// Σ − target (its distance in count mode), as a mean share.
    pub(crate) fn surplus(&self, s: &Sums) -> f64 {
        let d = self.target.len().max(1) as f64;
        (0..self.target.len())
            .map(|i| {
                let gap = s.alloc[i] - self.target[i];
                self.share(i, if self.count.is_some() { gap.abs() } else { gap.max(0.0) })
            })
            .sum::<f64>()
            / d
    }

    /// What one node adds to the score besides its size: its usage and idle terms.
    pub(crate) fn merit(&self, c: &Candidate) -> f64 {
        let part = |x: f64, max: f64| if max > 0.0 { x / max } else { 0.0 };
        0.35 * part(c.used, self.max[1]) + 0.1 * part(c.idle, self.max[3])
    }

    pub(crate) fn covers(&self, s: &Sums) -> bool {
        match self.count {
            Some(k) => s.n == k,
            None => s.alloc.iter().zip(&self.target).all(|(a, t)| a + 1e-9 >= *t),
        }
    }

    pub(crate) fn share(&self, i: usize, x: f64) -> f64 {
        if self.total[i] > 0.0 {
            x / self.total[i]
        } else {
            0.0
        }
    }

    /// The weighted score of a feasible set (higher is better), in [0, 1].
    pub(crate) fn score(&self, s: &Sums) -> f64 {
        if s.n == 0 {
            return f64::NEG_INFINITY;
        }
        let part = |x: f64, max: f64| if max > 0.0 { x / max } else { 0.0 };
        let [surplus, used, n, idle] = self.max;
        0.4 * (1.0 - part(self.surplus(s), surplus))
            + 0.35 * part(s.used, used)
            + 0.15 * (1.0 - part(s.n as f64, n))
            + 0.1 * part(s.idle, idle)
    }

    /// The score of `set` (indexes into `cands`), if it is feasible.
    pub fn score_of(&self, cands: &[Candidate], set: &[usize]) -> Option<f64> {
        let mut s = Sums::new(self.target.len());
        for &i in set {
            s.add(&cands[i], 1.0);
        }
        self.covers(&s).then(|| self.score(&s))
    }
}
