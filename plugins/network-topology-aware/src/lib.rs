//! Network-topology-aware: which HyperNode a topology-constrained job (or
//! one of its subgroups) should live in, and which node inside it a task
//! should take (Volcano's `network-topology-aware` plugin, v1.15).
//!
//! - `hypernode-order`: hypernode-level binpack, the weighted utilisation a
//!   HyperNode would have with the whole group on it (0 if it would
//!   overflow); among equals, the one already holding more of the group.
//! - `node-order`: for a task of a group with a `networkTopology`, nodes
//!   closer (in tiers) to where the group already runs; for any other
//!   task, hypernode binpack at every tier, faded per tier, so ordinary
//!   pods fill partly used HyperNodes and whole ones stay free.

use std::collections::HashMap;
use tephra_sdk::resource::EPSILON;
use tephra_sdk::{log, Args, Event, EventKind, ExtensionPoint as P, Policy, Session, TaskStatus, NONE};

/// Volcano's `MaxNodeScore`.
const MAX_SCORE: f64 = 100.0;

#[derive(Default)]
pub struct NetworkTopologyAware {
    weight: f64,
    /// (dimension, weight) of every weighted resource the snapshot has.
    dims: Vec<(usize, f64)>,
    normal_pods: bool,
    fading: f64,
    /// Per HyperNode, Σ allocatable and Σ used of its nodes.
    allocatable: Vec<Vec<f64>>,
    used: Vec<Vec<f64>>,
    /// Lowest and highest tier (the cluster's).
    min_tier: u32,
    max_tier: u32,
}

/// Volcano's `GetInt`-style argument: not an integer keeps the default,
/// a negative one becomes the default.
fn weight_arg(args: &Args, key: &str) -> f64 {
    match args.get(key).map(|v| v.trim().parse::<i64>()) {
        None => 1.0,
        Some(Ok(w)) if w >= 0 => w as f64,
        Some(Ok(_)) => 1.0,
        Some(Err(_)) => {
            log::warn(&format!("network-topology-aware: argument {key} is not an integer, using 1"));
            1.0
        }
    }
}

/// A task's group: its subgroup's tasks, or the job's tasks in none.
fn group_tasks(s: &Session, job: u32, group: u32) -> Vec<u32> {
    s.job_tasks(job).iter().copied().filter(|&t| s.snap.task_subgroup[t as usize] == group).collect()
}

/// Where `tasks` hold nodes: the lowest HyperNode holding them all.
fn home(s: &Session, tasks: &[u32]) -> Option<u32> {
    let mut at = None;
    for &t in tasks {
        let st = s.task_status(t);
        let n = s.task_node(t);
        if n == NONE || !(tephra_sdk::is_allocated(st) || st == TaskStatus::Pipelined) {
            continue;
        }
        let leaf = s.snap.node_hypernode[n as usize];
        at = Some(at.map_or(leaf, |a| s.common_hypernode(a, leaf)));
    }
    at
}

impl NetworkTopologyAware {
    /// Weighted utilisation of `alloc` with `used + req` on it (Volcano's
    /// binpack over the request's weighted resources); 0 if it overflows or
    /// the request has no weighted resource.
    fn binpack(&self, req: &[f64], used: &[f64], alloc: &[f64]) -> f64 {
        let (mut sum, mut weights) = (0.0, 0.0);
        for &(d, w) in &self.dims {
            if req[d] < EPSILON {
                continue;
            }
            let after = used[d] + req[d];
            if after > alloc[d] {
                return 0.0;
            }
            if alloc[d] > 0.0 {
                sum += w * after / alloc[d];
            }
            weights += w;
        }
        if weights > 0.0 {
            sum / weights
        } else {
            0.0
        }
    }

    fn tier_score(&self, tier: u32) -> f64 {
        if self.min_tier == self.max_tier {
            return 1.0;
        }
        if tier < self.min_tier || tier > self.max_tier {
            return 0.0;
        }
        f64::from(self.max_tier - tier) / f64::from(self.max_tier - self.min_tier)
    }

    /// The node's HyperNode of the lowest tier there is (Volcano looks at
    /// that tier only), if it has one.
    fn lowest(&self, s: &Session, node: u32) -> Option<u32> {
        let leaf = s.snap.node_hypernode[node as usize];
        (s.snap.hypernode_tier[leaf as usize] == self.min_tier).then_some(leaf)
    }

    /// A topology task: nodes nearer the group's home score higher.
    fn near_home(&self, s: &Session, tasks: &[u32], nodes: &[u32], scores: &mut [f64]) {
        let Some(home) = home(s, tasks) else { return };
        for (score, &n) in scores.iter_mut().zip(nodes) {
            *score = match self.lowest(s, n) {
                None => 0.0,
                Some(h) if h == home => 1.0,
                Some(h) => self.tier_score(s.snap.hypernode_tier[s.common_hypernode(h, home) as usize]),
            };
        }
        self.break_ties(s, tasks, nodes, scores, |s, n| self.lowest(s, n));
    }

    /// Among the nodes sharing the best score, those whose HyperNode holds
    /// more of the group gain that share (the group's tasks counted per
    /// HyperNode once, not per node).
    fn break_ties(
        &self,
        s: &Session,
        tasks: &[u32],
        ids: &[u32],
        scores: &mut [f64],
        hypernode: impl Fn(&Session, u32) -> Option<u32>,
    ) {
        let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        if scores.iter().filter(|&&x| x == max).count() < 2 || tasks.is_empty() {
            return;
        }
        let mut held: HashMap<u32, usize> = HashMap::new();
        for &t in tasks {
            let n = s.task_node(t);
            if n != NONE {
                for h in s.hypernode_chain(s.snap.node_hypernode[n as usize]) {
                    *held.entry(h).or_default() += 1;
                }
            }
        }
        for (score, &id) in scores.iter_mut().zip(ids) {
            if *score != max {
                continue;
            }
            let Some(h) = hypernode(s, id) else { continue };
            *score += held.get(&h).copied().unwrap_or(0) as f64 / tasks.len() as f64;
        }
    }

    /// An ordinary task: hypernode binpack at every tier, faded.
    fn binpack_tiers(&self, s: &Session, task: u32, nodes: &[u32], scores: &mut [f64]) {
        let req = s.task_req(task);
        let tiers: Vec<u32> = (self.min_tier..=self.max_tier).collect();
        // fading^(tier − 1); a tier 0 counts as tier 1 (no negative power of 0).
        let fade: Vec<f64> = tiers.iter().map(|&t| self.fading.powi(t.saturating_sub(1).min(64) as i32)).collect();
        let total: f64 = fade.iter().sum();
        if total <= 0.0 {
            return;
        }
        for (score, &n) in scores.iter_mut().zip(nodes) {
            let mut sum = 0.0;
            for (&t, &f) in tiers.iter().zip(&fade) {
                let part = match s.node_hypernode_at(n, t) {
                    Some(h) => self.binpack(req, &self.used[h as usize], &self.allocatable[h as usize]),
                    None => 1.0,
                };
                sum += f * part;
            }
            *score = sum / total;
        }
    }

    fn add(&mut self, s: &Session, task: u32, node: u32, sign: f64) {
        let req = s.task_req(task).to_vec();
        for h in s.hypernode_chain(s.snap.node_hypernode[node as usize]).collect::<Vec<_>>() {
            for (u, r) in self.used[h as usize].iter_mut().zip(&req) {
                *u += sign * r;
            }
        }
    }
}

impl Policy for NetworkTopologyAware {
    const NAME: &'static str = "network-topology-aware";
    const POINTS: &'static [P] = &[P::HypernodeOrder, P::NodeOrder];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        self.weight = weight_arg(args, "weight");
        let mut dims =
            vec![(0, weight_arg(args, "hypernode.binpack.cpu")), (1, weight_arg(args, "hypernode.binpack.memory"))];
        let listed = args.get("hypernode.binpack.resources").unwrap_or("");
        for name in listed.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let w = weight_arg(args, &format!("hypernode.binpack.resources.{name}"));
            if let Some(d) = s.dim(name) {
                dims.push((d, w));
            }
        }
        self.dims = dims;
        self.normal_pods = args.bool("hypernode.binpack.normal-pod.enable", true).unwrap_or(true);
        self.fading = match args.get("hypernode.binpack.normal-pod.fading").map(|v| v.trim().parse::<f64>()) {
            Some(Ok(f)) if f >= 0.0 => f,
            _ => 0.8,
        };
        let (h, d) = (s.snap.hypernode_tier.len(), s.dims());
        self.allocatable = vec![vec![0.0; d]; h];
        self.used = vec![vec![0.0; d]; h];
        for n in 0..s.nodes() as u32 {
            for x in s.hypernode_chain(s.snap.node_hypernode[n as usize]).collect::<Vec<_>>() {
                let (a, u) = (&mut self.allocatable[x as usize], &mut self.used[x as usize]);
                a.iter_mut().zip(s.node_allocatable(n)).for_each(|(a, v)| *a += v);
                u.iter_mut().zip(s.node_used(n)).for_each(|(u, v)| *u += v);
            }
        }
        self.min_tier = s.snap.hypernode_tier.iter().copied().min().unwrap_or(1);
        self.max_tier = s.snap.hypernode_tier.first().copied().unwrap_or(1);
        Ok(())
    }

    fn on_event(&mut self, s: &Session, e: &Event, _old: TaskStatus) {
        if e.node == NONE {
            return;
        }
        let sign = if e.kind == EventKind::Allocate { 1.0 } else { -1.0 };
        self.add(s, e.task, e.node, sign);
    }

    fn hypernode_order(&mut self, s: &Session, job: u32, subgroup: u32, hypernodes: &[u32], scores: &mut [f64]) {
        let tasks = if subgroup == NONE { s.job_tasks(job).to_vec() } else { group_tasks(s, job, subgroup) };
        let mut req = vec![0.0; s.dims()];
        for &t in &tasks {
            req.iter_mut().zip(s.task_req(t)).for_each(|(r, v)| *r += v);
        }
        for (score, &h) in scores.iter_mut().zip(hypernodes) {
            *score = self.binpack(&req, &self.used[h as usize], &self.allocatable[h as usize]);
        }
        self.break_ties(s, &tasks, hypernodes, scores, |_, h| Some(h));
        scores.iter_mut().for_each(|x| *x *= MAX_SCORE * self.weight);
    }

    fn node_order(&mut self, s: &Session, task: u32, nodes: &[u32], scores: &mut [f64]) {
        let job = s.task_job(task);
        let group = s.snap.task_subgroup[task as usize];
        let topology =
            if group == NONE { s.snap.job_topology[job as usize] } else { s.snap.subgroups[group as usize].topology };
        if topology {
            self.near_home(s, &group_tasks(s, job, group), nodes, scores);
        } else if self.normal_pods {
            self.binpack_tiers(s, task, nodes, scores);
        }
        scores.iter_mut().for_each(|x| *x *= MAX_SCORE * self.weight);
    }

    fn node_score(&mut self, s: &Session, task: u32, node: u32) -> f64 {
        let mut score = [0.0];
        self.node_order(s, task, &[node], &mut score);
        score[0]
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(NetworkTopologyAware: hypernode_order, node_order);

#[cfg(test)]
mod tests {
    //! Cases of Volcano's network_topology_aware_test.go, on its tree T3:
    //! s3..s6 at tier 1 (nodes sX-n1, sX-n2), s1 = {s3, s4} and s2 = {s5, s6}
    //! at tier 2, s0 = {s1, s2} at tier 3, the cluster at tier 4.
    use super::*;
    use tephra_sdk::{Runtime, SnapshotBuilder};

    const G: f64 = 1e9;

    fn args(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn assert_near(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "got {got:?}, want {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 0.1, "got {got:?}, want {want:?}");
        }
    }

    /// T3 with nodes of (cpu, memory) per rack; returns the builder, the
    /// nodes (s3-n1, s3-n2, s4-n1, …) and the HyperNodes s0..s6.
    fn t3(racks: [(f64, f64); 4]) -> (SnapshotBuilder, Vec<u32>, Vec<u32>) {
        let mut b = SnapshotBuilder::new(&[]);
        let s0 = b.hypernode("s0", 3, 0);
        let s1 = b.hypernode("s1", 2, s0);
        let s2 = b.hypernode("s2", 2, s0);
        let leaves =
            [b.hypernode("s3", 1, s1), b.hypernode("s4", 1, s1), b.hypernode("s5", 1, s2), b.hypernode("s6", 1, s2)];
        let mut nodes = Vec::new();
        for (leaf, (cpu, mem)) in leaves.iter().zip(racks) {
            for _ in 0..2 {
                let n = b.node(&[cpu * 1000.0, mem * G, 10.0]);
                b.place(n, *leaf);
                nodes.push(n);
            }
        }
        let hns = vec![s0, s1, s2, leaves[0], leaves[1], leaves[2], leaves[3]];
        (b, nodes, hns)
    }

    const MIXED: [(f64, f64); 4] = [(2.0, 4.0), (4.0, 4.0), (2.0, 8.0), (4.0, 8.0)];

    /// TestBatchNodeOrderFn "default arguments": an ordinary pod (2, 4G)
    /// packs by HyperNode at every tier, faded by 0.8 per tier.
    #[test]
    fn normal_pod_hypernode_binpack() {
        let (mut b, nodes, _) = t3(MIXED);
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        let p = b.task(j, &[2000.0, 4.0 * G], TaskStatus::Pending, NONE);
        let mut rt = Runtime::<NetworkTopologyAware>::default();
        rt.open_session(b.snap, args(&[])).unwrap();
        assert_near(&rt.node_order(p, &nodes), &[25.8, 25.8, 21.6, 21.6, 19.9, 19.9, 15.7, 15.7]);
    }

    /// TestBatchNodeOrderFn "normal-pod.enable false": no scores.
    #[test]
    fn normal_pod_binpack_off() {
        let (mut b, nodes, _) = t3(MIXED);
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        let p = b.task(j, &[2000.0, 4.0 * G], TaskStatus::Pending, NONE);
        let mut rt = Runtime::<NetworkTopologyAware>::default();
        rt.open_session(b.snap, args(&[("hypernode.binpack.normal-pod.enable", "false")])).unwrap();
        assert_near(&rt.node_order(p, &nodes), &[0.0; 8]);
    }

    /// TestBatchNodeOrderFn with weights, a scalar and fading 0, without and
    /// with two running pods on s3: a full HyperNode scores 0.
    #[test]
    fn normal_pod_binpack_weights_and_overflow() {
        let a = args(&[
            ("weight", "10"),
            ("hypernode.binpack.cpu", "1"),
            ("hypernode.binpack.memory", "4"),
            ("hypernode.binpack.resources", "nvidia.com/gpu, example.com/foo"),
            ("hypernode.binpack.resources.nvidia.com/gpu", "2"),
            ("hypernode.binpack.resources.example.com/foo", "3"),
            ("hypernode.binpack.normal-pod.fading", "0"),
        ]);
        for running in [false, true] {
            let mut b = SnapshotBuilder::new(&["example.com/foo"]);
            let s0 = b.hypernode("s0", 3, 0);
            let s1 = b.hypernode("s1", 2, s0);
            let s2 = b.hypernode("s2", 2, s0);
            let leaves = [
                b.hypernode("s3", 1, s1),
                b.hypernode("s4", 1, s1),
                b.hypernode("s5", 1, s2),
                b.hypernode("s6", 1, s2),
            ];
            let mut nodes = Vec::new();
            for (leaf, (cpu, mem, foo)) in
                leaves.iter().zip([(2.0, 4.0, 8.0), (4.0, 4.0, 8.0), (2.0, 8.0, 16.0), (4.0, 8.0, 16.0)])
            {
                for _ in 0..2 {
                    let n = b.node(&[cpu * 1000.0, mem * G, 10.0, foo * 1000.0]);
                    b.place(n, *leaf);
                    nodes.push(n);
                }
            }
            let q = b.queue(1.0);
            let j = b.job(q, 1);
            let req = [2000.0, 4.0 * G, 0.0, 8000.0];
            if running {
                b.task(j, &req, TaskStatus::Running, nodes[0]);
                b.task(j, &req, TaskStatus::Running, nodes[1]);
            }
            let p = b.task(j, &req, TaskStatus::Pending, NONE);
            let mut rt = Runtime::<NetworkTopologyAware>::default();
            rt.open_session(b.snap, a.clone()).unwrap();
            let s3 = if running { 0.0 } else { 500.0 };
            assert_near(&rt.node_order(p, &nodes), &[s3, s3, 468.75, 468.75, 281.25, 281.25, 250.0, 250.0]);
        }
    }

    /// TestNetworkTopologyAwareNodeScore_Hard "LCA tier" and "task-count
    /// tie-break": a topology pod scores nodes by the tier of their common
    /// HyperNode with where its job runs (here recovered from the running
    /// pods, as Volcano's scheduler recovers it).
    #[test]
    fn topology_pod_prefers_nodes_near_its_job() {
        for (running, want) in [(2, [100.0, 66.6, 33.3]), (3, [116.6, 91.6, 33.3])] {
            let (mut b, nodes, _) = t3([(2.0, 4.0); 4]);
            let q = b.queue(1.0);
            let j = b.job(q, 1);
            b.topology(j, 0);
            for &n in &[nodes[0], nodes[1], nodes[2]][..running] {
                b.task(j, &[2000.0, 4.0 * G], TaskStatus::Running, n);
            }
            let p = b.task(j, &[2000.0, 4.0 * G], TaskStatus::Pending, NONE);
            let mut rt = Runtime::<NetworkTopologyAware>::default();
            rt.open_session(b.snap, args(&[])).unwrap();
            assert_near(&rt.node_order(p, &[nodes[0], nodes[2], nodes[4]]), &want);
        }
    }

    /// TestBatchNodeOrderFn "score nodes for tasks with network topology":
    /// the pod's subgroup runs on s4-n1. Volcano's test pins the job to s1
    /// by annotation (66.7 / 116.7 / 33.3); the scheduler itself recovers
    /// s4 from the running pod, which these scores follow.
    #[test]
    fn subgroup_pod_prefers_its_subgroup_hypernode() {
        let (mut b, nodes, _) = t3(MIXED);
        let q = b.queue(1.0);
        let j = b.job(q, 2);
        b.topology(j, 2);
        let g = b.subgroup(j, "task1", 1, 2, true);
        let p = b.task(j, &[2000.0, 4.0 * G], TaskStatus::Pending, NONE);
        let r = b.task(j, &[2000.0, 4.0 * G], TaskStatus::Running, nodes[2]);
        b.join(p, g);
        b.join(r, g);
        let mut rt = Runtime::<NetworkTopologyAware>::default();
        rt.open_session(b.snap, args(&[])).unwrap();
        assert_near(&rt.node_order(p, &nodes), &[66.7, 66.7, 150.0, 150.0, 33.3, 33.3, 33.3, 33.3]);
    }

    /// TestHyperNodeOrderFn, both cases: the HyperNode a subgroup of two
    /// (4, 4G) pods would fill best.
    #[test]
    fn hypernode_order_binpacks_the_subgroup() {
        for (pairs, foo, want) in [
            (vec![], false, [25.0, 58.3, 45.8, 0.0, 100.0, 0.0, 75.0, 25.0]),
            (
                vec![
                    ("weight", "10"),
                    ("hypernode.binpack.cpu", "3"),
                    ("hypernode.binpack.memory", "4"),
                    ("hypernode.binpack.resources", "nvidia.com/gpu, example.com/foo"),
                    ("hypernode.binpack.resources.nvidia.com/gpu", "2"),
                    ("hypernode.binpack.resources.example.com/foo", "3"),
                    ("hypernode.binpack.normal-pod.fading", "0"),
                ],
                true,
                [266.7, 700.0, 450.0, 0.0, 0.0, 0.0, 800.0, 266.7],
            ),
        ] {
            let mut b = SnapshotBuilder::new(&["example.com/foo"]);
            let s0 = b.hypernode("s0", 3, 0);
            let s1 = b.hypernode("s1", 2, s0);
            let s2 = b.hypernode("s2", 2, s0);
            let leaves = [
                b.hypernode("s3", 1, s1),
                b.hypernode("s4", 1, s1),
                b.hypernode("s5", 1, s2),
                b.hypernode("s6", 1, s2),
            ];
            for (leaf, (cpu, mem, f)) in
                leaves.iter().zip([(2.0, 4.0, 8.0), (4.0, 4.0, 8.0), (2.0, 8.0, 16.0), (4.0, 8.0, 16.0)])
            {
                for k in 0..2 {
                    let f = if foo && k == 0 { f * 1000.0 } else { 0.0 };
                    let n = b.node(&[cpu * 1000.0, mem * G, 10.0, f]);
                    b.place(n, *leaf);
                }
            }
            let q = b.queue(1.0);
            let j = b.job(q, 2);
            b.topology(j, 2);
            let g = b.subgroup(j, "task1", 1, NONE, false);
            let req = [4000.0, 4.0 * G, 0.0, if foo { 8000.0 } else { 0.0 }];
            for _ in 0..2 {
                let t = b.task(j, &req, TaskStatus::Pending, NONE);
                b.join(t, g);
            }
            let mut rt = Runtime::<NetworkTopologyAware>::default();
            rt.open_session(b.snap, args(&pairs)).unwrap();
            let order = [s0, s1, s2, leaves[0], leaves[1], leaves[2], leaves[3], 0];
            assert_near(&rt.hypernode_order(j, g, &order), &want);
        }
    }
}
