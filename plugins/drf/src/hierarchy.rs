//! Hierarchical DRF (Volcano's drf with `enableHierarchy`): queues sit in a
//! tree given by their annotations `volcano.sh/hierarchy` ("root/eng/prod")
//! and `volcano.sh/hierarchy-weights` ("1/2/8"); jobs are the leaves. A leaf's
//! share is its job's dominant share; an inner node's is the dominant share of
//! its children's allocations, each unsaturated child scaled to the smallest
//! unsaturated share among them (saturated children count as they are).
//! Queues are ordered by walking their paths from the root: at the first
//! level where they differ, an unsaturated node goes before a saturated one,
//! then the smaller share / weight; an exact tie looks one level deeper.

use crate::dominant_share;
use std::collections::HashMap;
use std::sync::Arc;
use tephra_sdk::resource::EPSILON;
use tephra_sdk::Session;

pub const PATH: &str = "volcano.sh/hierarchy";
pub const WEIGHTS: &str = "volcano.sh/hierarchy-weights";

#[derive(Clone, Debug)]
struct Node {
    weight: f64,
    parent: usize,
    children: Vec<usize>,
    /// Leaves only: the job and its total request (all its tasks).
    job: Option<u32>,
    request: Vec<f64>,
    alloc: Vec<f64>,
    share: f64,
    saturated: bool,
}

/// The tree of one session, kept current with the jobs' allocations.
#[derive(Clone, Debug, Default)]
pub struct Tree {
    nodes: Vec<Node>,
    /// Per queue, its path's nodes below the root (`None`: a level no job
    /// made, which compares as empty and unsaturated).
    paths: Vec<Vec<Option<usize>>>,
    /// Per job, its leaf.
    leaf: Vec<usize>,
    total: Vec<f64>,
    /// Σ of the jobs' allocations.
    allocated: Vec<f64>,
    /// Per dimension: the cluster still has some of it (Volcano's demanding
    /// resources). A change here can flip any leaf's saturation.
    demanding: Vec<bool>,
}

/// A queue's path and weights from its annotations: the first element (the
/// root) is skipped; a weight that does not parse or is below 1 counts as 1.
/// (Volcano's admission refuses most such weights; its scheduler clamps.)
fn parse(s: &Session, q: u32) -> Vec<(Arc<str>, f64)> {
    let mut path = "";
    let mut weights = "";
    for l in s.snap.queue_annotations.iter().filter(|l| l.owner == q) {
        match s.str(l.key) {
            PATH => path = s.str(l.value),
            WEIGHTS => weights = s.str(l.value),
            _ => {}
        }
    }
    // Volcano's admission puts a path that does not start with "root" under
    // it (weight 1); files read here never went through it.
    let (path, weights) = if !path.is_empty() && !weights.is_empty() && !path.starts_with("root") {
        (format!("root/{path}"), format!("1/{weights}"))
    } else {
        (path.to_string(), weights.to_string())
    };
    let weights: Vec<&str> = weights.split('/').collect();
    path.split('/')
        .enumerate()
        .skip(1)
        .map(|(i, name)| {
            let w = weights.get(i).and_then(|w| w.trim().parse::<f64>().ok()).filter(|w| *w >= 1.0).unwrap_or(1.0);
            (Arc::from(name), w)
        })
        .collect()
}

impl Tree {
    /// The tree of the session's queues and jobs, with `alloc` (row-major per
    /// job) as the jobs' allocations.
    pub fn new(s: &Session, alloc: &[f64]) -> Tree {
        let d = s.dims();
        let root = Node {
            weight: 1.0,
            parent: 0,
            children: Vec::new(),
            job: None,
            request: Vec::new(),
            alloc: vec![0.0; d],
            share: 0.0,
            saturated: false,
        };
        let mut t = Tree {
            nodes: vec![root],
            paths: vec![Vec::new(); s.queues()],
            leaf: vec![0; s.jobs()],
            total: s.total().to_vec(),
            allocated: vec![0.0; d],
            demanding: Vec::new(),
        };
        // Inner nodes come into being through jobs, as in Volcano: the first
        // queue through a node fixes its weight.
        let mut by_name: HashMap<(usize, Arc<str>), usize> = HashMap::new();
        let parsed: Vec<Vec<(Arc<str>, f64)>> = (0..s.queues() as u32).map(|q| parse(s, q)).collect();
        for j in 0..s.jobs() as u32 {
            let q = s.job_queue(j) as usize;
            let mut at = 0;
            if let Some(path) = parsed.get(q) {
                for (name, w) in path {
                    at = *by_name.entry((at, name.clone())).or_insert_with(|| {
                        t.nodes.push(Node { weight: *w, parent: at, children: Vec::new(), ..t.nodes[0].clone() });
                        let id = t.nodes.len() - 1;
                        t.nodes[at].children.push(id);
                        id
                    });
                }
            }
            let mut request = vec![0.0; d];
            for &task in s.job_tasks(j) {
                tephra_sdk::resource::add(&mut request, s.task_req(task));
            }
            let row = alloc[j as usize * d..(j as usize + 1) * d].to_vec();
            tephra_sdk::resource::add(&mut t.allocated, &row);
            t.nodes.push(Node {
                weight: 1.0,
                parent: at,
                children: Vec::new(),
                job: Some(j),
                request,
                share: dominant_share(&row, &t.total),
                alloc: row,
                saturated: false,
            });
            let id = t.nodes.len() - 1;
            t.nodes[at].children.push(id);
            t.leaf[j as usize] = id;
        }
        for (q, path) in parsed.iter().enumerate() {
            let mut at = Some(0);
            t.paths[q] = path
                .iter()
                .map(|(name, _)| {
                    at = at.and_then(|a| by_name.get(&(a, name.clone())).copied());
                    at
                })
                .collect();
        }
        t.demanding = t.demanding_now();
        t.update(0);
        t
    }

    fn demanding_now(&self) -> Vec<bool> {
        self.allocated.iter().zip(&self.total).map(|(a, t)| *t >= EPSILON && a < t).collect()
    }

    /// A job's allocation moved by `delta` (added, or taken off with a
    /// negative sign).
    pub fn shift(&mut self, job: u32, delta: &[f64], sign: f64) {
        let Some(&leaf) = self.leaf.get(job as usize) else { return };
        for (a, r) in self.nodes[leaf].alloc.iter_mut().zip(delta) {
            *a += sign * r;
        }
        for (a, r) in self.allocated.iter_mut().zip(delta) {
            *a += sign * r;
        }
        let leaf_node = &mut self.nodes[leaf];
        leaf_node.share = dominant_share(&leaf_node.alloc, &self.total);
        let demanding = self.demanding_now();
        if demanding != self.demanding {
            // Any leaf's saturation may have changed: all of the tree again.
            self.demanding = demanding;
            self.update(0);
            return;
        }
        // Only the leaf and its ancestors moved.
        self.settle(leaf);
        let mut at = leaf;
        while at != 0 {
            at = self.nodes[at].parent;
            self.settle(at);
        }
    }

    /// Recomputes `node`'s subtree, children first.
    fn update(&mut self, node: usize) {
        for i in 0..self.nodes[node].children.len() {
            let c = self.nodes[node].children[i];
            self.update(c);
        }
        self.settle(node);
    }

    /// `node`'s saturation, allocation and share from its children as they are.
    fn settle(&mut self, node: usize) {
        let n = &self.nodes[node];
        if n.job.is_some() {
            let saturated = self.leaf_saturated(n);
            self.nodes[node].saturated = saturated;
            return;
        }
        let live = |c: &Node| c.share != 0.0 && !c.saturated;
        let min = n.children.iter().map(|&c| &self.nodes[c]).filter(|c| live(c)).map(|c| c.share).fold(1.0, f64::min);
        let mut acc = vec![0.0; self.total.len()];
        let mut saturated = true;
        for &c in &n.children {
            let c = &self.nodes[c];
            saturated &= c.saturated;
            if c.share == 0.0 {
                continue;
            }
            let scale = if c.saturated { 1.0 } else { min / c.share };
            acc.iter_mut().zip(&c.alloc).for_each(|(a, x)| *a += x * scale);
        }
        let share = dominant_share(&acc, &self.total);
        let n = &mut self.nodes[node];
        (n.alloc, n.share, n.saturated) = (acc, share, saturated);
    }

    /// A job is saturated once it holds all it asks for in some dimension,
    /// or holds some of a dimension the cluster has run out of (a job that
    /// holds nothing never is).
    fn leaf_saturated(&self, n: &Node) -> bool {
        n.alloc.iter().zip(&n.request).enumerate().any(|(d, (&a, &r))| {
            a >= EPSILON && r != 0.0 && (a >= r || !self.demanding.get(d).copied().unwrap_or(false))
        })
    }

    /// A queue's order key below the root: per level (saturated, share /
    /// weight), compared lexicographically. Volcano compares two queues down
    /// to the shorter path only; a queue whose path is a prefix of another's
    /// (which Volcano's admission refuses) goes first here.
    pub fn key(&self, q: u32) -> Vec<(bool, f64)> {
        let Some(path) = self.paths.get(q as usize) else { return Vec::new() };
        path.iter()
            .map(|n| match n {
                Some(n) => {
                    let n = &self.nodes[*n];
                    (n.saturated, n.share / n.weight)
                }
                None => (false, 0.0),
            })
            .collect()
    }

    /// Whether `l` goes strictly before `r`.
    pub fn before(&self, l: u32, r: u32) -> bool {
        compare(&self.key(l), &self.key(r)) == std::cmp::Ordering::Less
    }

    /// [`Tree::key`] as one number for the contract's order keys, which the
    /// allocate action takes when a queue is pushed and compares later (as
    /// Volcano's heap does): three levels of 17 bits, each (saturated, share
    /// / weight) quantized to 1/16384. Shares closer than that tie at their
    /// level (Volcano compares exactly), and levels past the third are left out.
    pub fn order_key(&self, q: u32) -> f64 {
        let digit = |(saturated, x): (bool, f64)| {
            let v = if saturated { 4.0 } else { 0.0 } + x.clamp(0.0, 3.999);
            (v * 16384.0).floor()
        };
        let mut key = 0.0;
        let levels = self.key(q);
        for i in 0..3 {
            key = key * 131072.0 + levels.get(i).copied().map_or(0.0, digit);
        }
        key
    }
}

/// Lexicographic over levels: unsaturated first, then the smaller weighted share.
pub fn compare(l: &[(bool, f64)], r: &[(bool, f64)]) -> std::cmp::Ordering {
    for (a, b) in l.iter().zip(r) {
        let o = a.0.cmp(&b.0).then(a.1.total_cmp(&b.1));
        if o.is_ne() {
            return o;
        }
    }
    l.len().cmp(&r.len())
}

#[cfg(test)]
mod tests {
    use crate::Drf;
    use tephra_sdk::types::Label;
    use tephra_sdk::{Runtime, SnapshotBuilder, TaskStatus::*, Vote, NONE};

    /// A queue at `path` with `weights` (annotations as Volcano reads them).
    fn queue(b: &mut SnapshotBuilder, path: &str, weights: &str) -> u32 {
        let q = b.queue(1.0);
        for (k, v) in [(super::PATH, path), (super::WEIGHTS, weights)] {
            let (key, value) = (b.string(k), b.string(v));
            b.snap.queue_annotations.push(Label { owner: q, key, value });
        }
        q
    }

    fn open(b: SnapshotBuilder) -> Runtime<Drf> {
        let mut rt = Runtime::<Drf>::default();
        rt.open_session(b.snap, vec![("enableHierarchy".into(), "true".into())]).unwrap();
        rt
    }

    /// reference: Volcano's docs/design/hdrf.md rescaling; the parent of two
    /// unsaturated children counts each at the smaller child's share.
    #[test]
    fn inner_shares_rescale_children_and_order_queues_level_by_level() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[10000.0, 10e9, 50.0]);
        let sci = queue(&mut b, "root/sci", "100/50");
        let dev = queue(&mut b, "root/eng/dev", "100/50/50");
        let prod = queue(&mut b, "root/eng/prod", "100/50/50");
        // Without "root" in front, as Volcano's admission would put it.
        let other = queue(&mut b, "eng/dev", "2/50");
        let (j1, j21, j22) = (b.job(sci, 0), b.job(dev, 0), b.job(prod, 0));
        for _ in 0..2 {
            b.task(j1, &[1000.0, 1e9], Running, n);
        }
        for _ in 0..3 {
            b.task(j21, &[1000.0], Running, n);
        }
        b.task(j22, &[0.0, 1e9], Running, n);
        // Each job wants more than it holds: none is saturated.
        for (j, req) in [(j1, [1000.0, 1e9]), (j21, [1000.0, 0.0]), (j22, [0.0, 1e9])] {
            b.task(j, &req, Pending, NONE);
        }
        let mut rt = open(b);
        let tree = rt.plugin.tree.as_ref().unwrap();
        // eng: dev (0.3) scaled to prod's 0.1, plus prod: cpu 1000, memory 1e9 → 0.1; sci 0.2.
        let eng = tree.key(dev)[0];
        assert!((eng.1 - 0.1 / 50.0).abs() < 1e-12, "{eng:?}");
        assert!((tree.key(sci)[0].1 - 0.2 / 50.0).abs() < 1e-12);
        // eng before sci; inside eng, prod (0.1) before dev (0.3).
        let keys = rt.queue_order(&[sci, dev, prod]);
        // eng/dev is root/eng/dev: the same nodes as queue dev.
        assert_eq!(rt.plugin.tree.as_ref().unwrap().key(other), rt.plugin.tree.as_ref().unwrap().key(dev));
        assert!(keys[2] < keys[1] && keys[1] < keys[0], "{keys:?}");
        // Flat mode has no queue order.
        let mut flat = Runtime::<Drf>::default();
        flat.open_session(rt.session.as_ref().unwrap().snap.clone(), vec![]).unwrap();
        assert_eq!(flat.queue_order(&[sci, dev, prod]), vec![0.0; 3]);
    }

    /// reference: Volcano's hdrf "blocking nodes" case; a job holding a
    /// resource the cluster ran out of is saturated and its queue goes last.
    #[test]
    fn saturated_queues_go_after_the_others() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[2000.0, 10e9, 50.0]);
        let a = queue(&mut b, "root/a", "1/1");
        let c = queue(&mut b, "root/c", "1/1");
        let mem = queue(&mut b, "root/mem", "1/1");
        let (ja, jc, jm) = (b.job(a, 0), b.job(c, 0), b.job(mem, 0));
        // Two cpu jobs use up the cpu (share 0.5 each); the memory job holds 90% of memory.
        for j in [ja, jc] {
            b.task(j, &[1000.0], Running, n);
            b.task(j, &[1000.0], Pending, NONE);
        }
        for _ in 0..9 {
            b.task(jm, &[0.0, 1e9], Running, n);
        }
        b.task(jm, &[0.0, 1e9], Pending, NONE);
        let mut rt = open(b);
        let keys = rt.queue_order(&[a, c, mem]);
        assert!(keys[2] < keys[0] && keys[0] == keys[1], "the unsaturated memory queue first, despite 0.9: {keys:?}");
        assert!(rt.plugin.tree.as_ref().unwrap().key(a)[0].0);
    }

    #[test]
    fn reclaim_takes_only_what_keeps_the_reclaimer_first() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[10000.0, 100e9, 500.0]);
        let poor = queue(&mut b, "root/poor", "1/1");
        let rich = queue(&mut b, "root/rich", "1/1");
        let (jp, jr) = (b.job(poor, 0), b.job(rich, 0));
        b.task(jp, &[1000.0], Running, n);
        let reclaimer = b.task(jp, &[1000.0], Pending, NONE);
        // More than it will hold: the reclaimer's job stays unsaturated.
        b.task(jp, &[1000.0], Pending, NONE);
        let small = b.task(jr, &[1000.0], Running, n);
        let big: Vec<u32> = (0..5).map(|_| b.task(jr, &[1000.0], Running, n)).collect();
        let mut rt = open(b);
        // poor with the reclaimer: 0.2; rich without one task: 0.5 (and no
        // longer holding all it asks for) → poor still first.
        let v = rt.reclaimable(reclaimer, &[small, big[0]]);
        assert_eq!((v.tasks, v.vote), (vec![small, big[0]], Vote::Permit));
        // Against a queue that would fall to the reclaimer's share or below: no victim.
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[10000.0, 100e9, 500.0]);
        let poor = queue(&mut b, "root/poor", "1/1");
        let even = queue(&mut b, "root/even", "1/1");
        let (jp, je) = (b.job(poor, 0), b.job(even, 0));
        b.task(jp, &[1000.0], Running, n);
        let reclaimer = b.task(jp, &[1000.0], Pending, NONE);
        b.task(jp, &[1000.0], Pending, NONE);
        let e: Vec<u32> = (0..3).map(|_| b.task(je, &[1000.0], Running, n)).collect();
        let mut rt = open(b);
        assert!(rt.reclaimable(reclaimer, &e).tasks.is_empty());
        // Flat mode abstains.
        let mut flat = Runtime::<Drf>::default();
        flat.open_session(rt.session.as_ref().unwrap().snap.clone(), vec![]).unwrap();
        assert_eq!(flat.reclaimable(reclaimer, &e).vote, Vote::Abstain);
    }
}
