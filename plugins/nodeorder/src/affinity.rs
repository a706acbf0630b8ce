//! InterPodAffinity's score, with kube-scheduler's rules: per topology
//! domain, the weights of the task's preferred terms times the pods they
//! pick there (anti-affinity subtracting), plus, for the pods there whose
//! preferred terms (or required affinity terms, weight 1) pick the task,
//! those weights; a node scores the sum over the keys it has, then
//! `100 × (score − min) / (max − min)`. Normalized over every node, as
//! `spread.rs` explains; tasks with preferred terms get no class, and the
//! host makes the tasks such terms of other pods can pick classless too.

use tephra_sdk::pods::{Clause, Pods, TermGroups};
use tephra_sdk::{Session, NONE};

/// The weight of an existing pod's required affinity term (kube-scheduler's
/// `hardPodAffinityWeight` default).
const HARD_WEIGHT: i64 = 1;

/// A term's selector and signed weight (anti-affinity subtracts).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Term {
    clause: Clause,
    weight: i64,
}

pub struct Preferred {
    /// Per task, its preferred terms with their keys.
    of_task: Vec<Vec<(u32, Term)>>,
    /// Pods' terms that may pick an incoming task, and where their holders count.
    groups: TermGroups<Term>,
    scores: Option<(u32, u64, Vec<i64>)>,
}

impl Default for Preferred {
    fn default() -> Self {
        Preferred { of_task: Vec::new(), groups: TermGroups::new(0), scores: None }
    }
}

impl Preferred {
    pub fn index(&mut self, s: &Session, pods: usize) {
        let tasks = s.tasks();
        self.of_task = vec![Vec::new(); tasks];
        self.groups = TermGroups::new(pods);
        for t in s.snap.pod_terms.iter().filter(|t| (t.pod as usize) < pods) {
            let sign = if t.anti { -1 } else { 1 };
            let p = t.pod as usize;
            let weight = match (t.weight, t.anti) {
                (0, true) => continue,
                (0, false) => HARD_WEIGHT,
                (w, _) => sign * w as i64,
            };
            let term = Term { clause: Clause::of_term(s, t), weight };
            if t.weight > 0 && p < tasks {
                self.of_task[p].push((t.topology_key, term.clone()));
            }
            self.groups.add(t.pod, t.topology_key, term);
        }
    }

    /// Where the pods holding terms count this session.
    pub fn open(&mut self, s: &Session, pods: &mut Pods) {
        self.scores = None;
        self.groups.open(s, pods);
    }

    /// Whether any pod has a term that scores (preferred, or required affinity).
    pub fn any(&self) -> bool {
        !self.groups.groups.is_empty()
    }

    /// Pod `p` moved from node `from` to `to`.
    pub fn shift(&mut self, s: &Session, pods: &mut Pods, p: u32, from: u32, to: u32) {
        self.groups.shift(s, pods, p, from, to);
    }

    /// The normalized score of task `t` on node `n`, 0–100.
    pub fn score(&mut self, s: &Session, pods: &mut Pods, t: u32, n: u32) -> i64 {
        if !self.scores.as_ref().is_some_and(|(task, epoch, _)| *task == t && *epoch == pods.epoch) {
            let scores = self.all(s, pods, t);
            self.scores = Some((t, pods.epoch, scores));
        }
        self.scores.as_ref().map_or(0, |(_, _, v)| v[n as usize])
    }

    fn all(&self, s: &Session, pods: &mut Pods, t: u32) -> Vec<i64> {
        // Per topology key: per domain, the summed weights.
        let mut topology: Vec<(u32, Vec<i64>)> = Vec::new();
        let mut add = |pods: &mut Pods, key: u32, weight: i64, counts: &[(u32, i64)]| {
            let at = match topology.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    topology.push((key, vec![0; pods.domains(s, key).count]));
                    topology.len() - 1
                }
            };
            for &(d, c) in counts {
                topology[at].1[d as usize] += weight * c;
            }
        };
        for (key, x) in &self.of_task[t as usize] {
            let c = pods.counter(s, &vec![x.clause.clone()]);
            let per = pods.per_domain(s, c, *key).iter().enumerate();
            let counts: Vec<(u32, i64)> = per.filter(|(_, &n)| n > 0).map(|(d, &n)| (d as u32, n as i64)).collect();
            add(pods, *key, x.weight, &counts);
        }
        for (term, key, per) in self.groups.groups.iter().filter(|g| !g.2.is_empty()) {
            if pods.picks(s, &term.clause, t) {
                add(pods, *key, term.weight, per);
            }
        }
        let doms: Vec<_> = topology.iter().map(|(k, _)| pods.domains(s, *k).clone()).collect();
        let raw: Vec<i64> = (0..s.nodes())
            .map(|n| {
                let per_key = topology.iter().zip(&doms);
                per_key.filter(|(_, d)| d.of_node[n] != NONE).map(|((_, w), d)| w[d.of_node[n] as usize]).sum()
            })
            .collect();
        let (min, max) = raw.iter().fold((i64::MAX, i64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let diff = max.saturating_sub(min);
        raw.iter().map(|&x| if diff > 0 { (100.0 * ((x - min) as f64 / diff as f64)) as i64 } else { 0 }).collect()
    }
}
