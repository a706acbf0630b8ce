//! The node-set search for large clusters, over node shapes instead of
//! nodes. Nodes with the same allocatable row are interchangeable for the
//! surplus and the node count, and the score is linear, so for a given
//! number of nodes of each shape the best choice takes the nodes with the
//! most `0.35 used + 0.1 idle` (normalised) of that shape. The search is
//! then over one count per shape: greedy starts, then iterated local search
//! with moves that change one or two counts, scored in O(shapes) each.

use crate::score::{Candidate, Request, Sums};

/// Nodes of one shape, best merit first, with prefix sums.
struct Shape {
    alloc: Vec<f64>,
    members: Vec<usize>,
    /// `used[k]`, `idle[k]`: sums over the first k members.
    used: Vec<f64>,
    idle: Vec<f64>,
}

/// Groups `cands` by allocatable row; `None` when there are more than
/// `max_shapes` shapes (the per-node search is then used).
fn shapes(req: &Request, cands: &[Candidate], max_shapes: usize) -> Option<Vec<Shape>> {
    let mut out: Vec<Shape> = Vec::new();
    for (i, c) in cands.iter().enumerate() {
        match out.iter_mut().find(|s| s.alloc == c.alloc) {
            Some(s) => s.members.push(i),
            None => {
                if out.len() == max_shapes {
                    return None;
                }
                out.push(Shape { alloc: c.alloc.clone(), members: vec![i], used: vec![], idle: vec![] });
            }
        }
    }
    let merit = |c: &Candidate| req.merit(c);
    for s in &mut out {
        s.members.sort_by(|&a, &b| merit(&cands[b]).total_cmp(&merit(&cands[a])).then(a.cmp(&b)));
        let (mut u, mut v) = (vec![0.0], vec![0.0]);
        for &m in &s.members {
            u.push(u.last().unwrap() + cands[m].used);
            v.push(v.last().unwrap() + cands[m].idle);
        }
        (s.used, s.idle) = (u, v);
    }
    Some(out)
}

fn sums(shapes: &[Shape], counts: &[usize], d: usize) -> Sums {
    let mut s = Sums::new(d);
    for (sh, &k) in shapes.iter().zip(counts) {
        for (a, x) in s.alloc.iter_mut().zip(&sh.alloc) {
            *a += k as f64 * x;
        }
        s.used += sh.used[k];
        s.idle += sh.idle[k];
        s.n += k;
    }
    s
}

/// The best node set found within `budget` score evaluations, or `None`
/// when the shapes are too many (more than `max_shapes`) or nothing covers.
pub fn search(req: &Request, cands: &[Candidate], budget: usize, max_shapes: usize) -> Option<Option<Vec<usize>>> {
    let shapes = shapes(req, cands, max_shapes)?;
    let d = req.target.len();
    let c = shapes.len();
    let eval = |counts: &[usize]| {
        let s = sums(&shapes, counts, d);
        req.covers(&s).then(|| req.score(&s))
    };
    let mut evals = 0usize;
    let mut best: Option<(f64, Vec<usize>)> = None;
    // Greedy starts: fill shapes in several orders until the request is met.
    let size = |s: &Shape| s.alloc.iter().enumerate().map(|(i, x)| req.share(i, *x)).sum::<f64>();
    let mut orders: Vec<Vec<usize>> = Vec::new();
    let mut by = |key: &dyn Fn(&Shape) -> f64| {
        let mut o: Vec<usize> = (0..c).collect();
        o.sort_by(|&a, &b| key(&shapes[b]).total_cmp(&key(&shapes[a])).then(a.cmp(&b)));
        orders.push(o);
    };
    by(&|s| size(s));
    by(&|s| -size(s));
    by(&|s| s.used[1] + s.idle[1]);
    let mut starts = Vec::new();
    for order in &orders {
        let mut counts = vec![0usize; c];
        'fill: for &i in order {
            while counts[i] < shapes[i].members.len() {
                if req.covers(&sums(&shapes, &counts, d)) {
                    break 'fill;
                }
                counts[i] += 1;
            }
        }
        starts.push(counts);
    }
    let mut rng = 0x9e3779b97f4a7c15u64 ^ c as u64;
    let mut next = |m: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % m.max(1) as u64) as usize
    };
    let mut round = 0;
    while evals < budget {
        let mut counts = match starts.pop() {
            Some(s) => s,
            None => {
                // Shake the best: up to three random moves, adds or removals.
                let Some((_, b)) = &best else { break };
                let mut k = b.clone();
                for _ in 0..1 + next(3) {
                    let (a, z, op) = (next(c), next(c), next(3));
                    if op != 1 && k[a] > 0 {
                        k[a] -= 1;
                    }
                    if op != 2 && k[z] < shapes[z].members.len() {
                        k[z] += 1;
                    }
                }
                k
            }
        };
        round += 1;
        let Some(mut score) = eval(&counts) else {
            evals += 1;
            if round > 3 * c + 10 && best.is_none() {
                break;
            }
            continue;
        };
        // Local search: one or two counts change per move.
        let deltas: [(isize, isize); 10] =
            [(1, 0), (-1, 0), (1, -1), (-1, 1), (1, -2), (-2, 1), (2, -1), (-1, 2), (2, -2), (-2, 2)];
        'improve: loop {
            for a in 0..c {
                for b in 0..c {
                    for &(da, db) in &deltas {
                        if (db != 0 && a == b) || (db == 0 && b > 0) {
                            continue;
                        }
                        let (na, nb) = (counts[a] as isize + da, counts[b] as isize + db);
                        let fits = |x: isize, s: &Shape| x >= 0 && x as usize <= s.members.len();
                        if !fits(na, &shapes[a]) || (db != 0 && !fits(nb, &shapes[b])) {
                            continue;
                        }
                        let mut k = counts.clone();
                        k[a] = na as usize;
                        if db != 0 {
                            k[b] = nb as usize;
                        }
                        evals += 1;
                        if let Some(sc) = eval(&k) {
                            if sc > score * (1.0 + 1e-12) {
                                (counts, score) = (k, sc);
                                continue 'improve;
                            }
                        }
                        if evals >= budget {
                            break 'improve;
                        }
                    }
                }
            }
            break;
        }
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, counts));
        }
    }
    Some(best.map(|(_, counts)| {
        let mut set: Vec<usize> =
            shapes.iter().zip(&counts).flat_map(|(s, &k)| s.members[..k].iter().copied()).collect();
        set.sort_unstable();
        set
    }))
}
