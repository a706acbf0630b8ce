//! PodTopologySpread's score (`whenUnsatisfiable: ScheduleAnyway`), with
//! kube-scheduler's rules: per node, Σ over the task's soft constraints of
//! `count × ln(domains + 2) + maxSkew − 1`, where count is the matching pods
//! of the task's namespace in the node's domain (on the node itself for
//! `kubernetes.io/hostname`), then `100 × (max + min − score) / max`; a node
//! missing a constraint's key scores 0. Volcano normalizes over the nodes
//! of its batch; here over every node, so that a node's score does not
//! depend on which others are asked with it (a task with soft constraints
//! gets no class: its scores move with every placement).

use tephra_sdk::nodes::NodeRules;
use tephra_sdk::pods::{Constraint, Pods};
use tephra_sdk::{Session, NONE};

const HOSTNAME: &str = "kubernetes.io/hostname";

#[derive(Default)]
pub struct SoftSpread {
    of_task: Vec<Vec<Constraint>>,
    /// Some task has a soft constraint.
    any: bool,
    hostname: u32,
    /// The task and pod epoch the scores were worked out for, and per node its score.
    scores: Option<(u32, u64, Vec<i64>)>,
}

impl SoftSpread {
    pub fn index(&mut self, s: &Session) {
        self.of_task = Constraint::of_tasks(s, false);
        self.any = self.of_task.iter().any(|c| !c.is_empty());
        self.hostname = s.str_id(HOSTNAME).unwrap_or(NONE);
    }

    pub fn open(&mut self) {
        self.scores = None;
    }

    pub fn applies(&self, t: u32) -> bool {
        !self.of_task[t as usize].is_empty()
    }

    /// Whether any task has a soft constraint.
    pub fn any(&self) -> bool {
        self.any
    }

    /// The normalized score of task `t` on node `n`, 0–100.
    pub fn score(&mut self, s: &Session, pods: &mut Pods, rules: &NodeRules, t: u32, n: u32) -> i64 {
        if !self.scores.as_ref().is_some_and(|(task, epoch, _)| *task == t && *epoch == pods.epoch) {
            let scores = self.all(s, pods, rules, t);
            self.scores = Some((t, pods.epoch, scores));
        }
        self.scores.as_ref().map_or(0, |(_, _, v)| v[n as usize])
    }

    /// Every node's normalized score (a node missing a key: `i64::MIN` until normalized).
    fn all(&self, s: &Session, pods: &mut Pods, rules: &NodeRules, t: u32) -> Vec<i64> {
        let cs = &self.of_task[t as usize];
        let doms: Vec<_> = cs.iter().map(|c| pods.domains(s, c.key).clone()).collect();
        let counters: Vec<usize> = cs.iter().map(|c| pods.counter(s, &vec![c.clause.clone()])).collect();
        let nodes = s.nodes();
        let ignored: Vec<bool> = (0..nodes).map(|n| doms.iter().any(|d| d.of_node[n] == NONE)).collect();
        // Per constraint: per domain the pods counted, and how many domains there are.
        let mut weights = Vec::new();
        let mut per_domain = Vec::new();
        for (i, c) in cs.iter().enumerate() {
            let mut seen = vec![false; doms[i].count];
            let mut count = vec![0i64; doms[i].count];
            for n in (0..nodes).filter(|&n| !ignored[n]) {
                let d = doms[i].of_node[n] as usize;
                seen[d] = true;
                let admitted = (!c.honor_affinity || rules.affine(s, t as usize, n))
                    && (!c.honor_taints
                        || rules.hard_taints[n].is_empty()
                        || rules.untolerated_taint(s, t as usize, n).is_none());
                if admitted {
                    count[d] += pods.counters[counters[i]].per_node[n] as i64;
                }
            }
            let size = if c.key == self.hostname {
                ignored.iter().filter(|&&x| !x).count()
            } else {
                seen.iter().filter(|&&x| x).count()
            };
            weights.push(((size + 2) as f64).ln());
            per_domain.push(count);
        }
        let raw: Vec<Option<i64>> = (0..nodes)
            .map(|n| {
                (!ignored[n]).then(|| {
                    let mut score = 0.0;
                    for (i, c) in cs.iter().enumerate() {
                        let count = if c.key == self.hostname {
                            pods.counters[counters[i]].per_node[n] as i64
                        } else {
                            per_domain[i][doms[i].of_node[n] as usize]
                        };
                        score += count as f64 * weights[i] + (c.max_skew as f64 - 1.0);
                    }
                    score.round() as i64
                })
            })
            .collect();
        let (min, max) = raw.iter().flatten().fold((i64::MAX, 0), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        raw.into_iter()
            .map(|x| match x {
                None => 0,
                Some(_) if max == 0 => 100,
                Some(x) => 100 * (max + min - x) / max,
            })
            .collect()
    }
}
