//! InterPodAffinity's filter, with kube-scheduler's rules and messages:
//!
//! - the task's required affinity: on every term's topology key the node
//!   must have a value whose domain holds a pod matching all the terms;
//!   unless no such pod counts anywhere and the task matches its own terms
//!   (the first pod of a group that wants to be together);
//! - the task's required anti-affinity: no pod matching a term in the
//!   node's domain of that term's key;
//! - existing pods' required anti-affinity: the node is in no domain where a
//!   pod counts whose term picks the task.

use std::collections::HashMap;
use std::sync::Arc;
use tephra_sdk::pods::{Clause, Domains, Filter, Pods, Req, TermGroups};
use tephra_sdk::types::PodTerm;
use tephra_sdk::{Session, Unfit, NONE};

pub const AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const ANTI: &str = "node(s) didn't match pod anti-affinity rules";
pub const EXISTING: &str = "node(s) didn't satisfy existing pods anti-affinity rules";

/// A required term: its topology key and what it picks.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Term {
    key: u32,
    clause: Clause,
}

/// A key's domains, and per domain whether it holds what a term looks for.
type Held = (Arc<Domains>, Vec<bool>);

/// What a call about one task works out before looking at nodes.
struct Prepared {
    task: u32,
    epoch: u64,
    /// Per affinity term, its key's domains and whether a pod matching all
    /// terms counts in each; `free`: no such pod anywhere and the task
    /// matches the terms itself.
    affinity: Option<(Vec<Held>, bool)>,
    /// Per anti-affinity term, the domains holding a pod it picks.
    anti: Vec<Held>,
    /// Per key, the domains existing pods' anti-affinity closes to the task.
    closed: Vec<Held>,
}

pub struct InterPod {
    /// Per task, its required affinity and anti-affinity terms.
    affinity: Vec<Vec<Term>>,
    anti: Vec<Vec<Term>>,
    /// Pods' required anti-affinity terms, and where the pods holding them count.
    groups: TermGroups<Clause>,
    groups_by_label: HashMap<(u32, u32), Vec<usize>>,
    groups_unanchored: Vec<usize>,
    prepared: Option<Prepared>,
    pub fixed: [Unfit; 3],
}

impl Default for InterPod {
    fn default() -> Self {
        InterPod {
            affinity: Vec::new(),
            anti: Vec::new(),
            groups: TermGroups::new(0),
            groups_by_label: HashMap::new(),
            groups_unanchored: Vec::new(),
            prepared: None,
            fixed: [Unfit::unresolvable(AFFINITY), Unfit::new(ANTI), Unfit::new(EXISTING)],
        }
    }
}

fn term(s: &Session, t: &PodTerm) -> Term {
    Term { key: t.topology_key, clause: Clause::of_term(s, t) }
}

impl InterPod {
    /// Indexes the pods' required terms (they last while sessions continue).
    pub fn index(&mut self, s: &Session, pods: usize) {
        let tasks = s.tasks();
        self.affinity = vec![Vec::new(); tasks];
        self.anti = vec![Vec::new(); tasks];
        self.groups = TermGroups::new(pods);
        self.groups_by_label.clear();
        self.groups_unanchored.clear();
        for t in s.snap.pod_terms.iter().filter(|t| t.weight == 0 && (t.pod as usize) < pods) {
            let term = term(s, t);
            let p = t.pod as usize;
            if !t.anti {
                if p < tasks {
                    self.affinity[p].push(term);
                }
                continue;
            }
            if p < tasks {
                self.anti[p].push(term.clone());
            }
            self.groups.add(p as u32, term.key, term.clause);
        }
        for (g, (clause, _, _)) in self.groups.groups.iter().enumerate() {
            let anchor = clause.reqs.iter().find_map(|r| match r {
                Req::In(k, vs) => Some((*k, vs.clone())),
                _ => None,
            });
            match anchor {
                Some((k, vs)) => vs.into_iter().for_each(|v| self.groups_by_label.entry((k, v)).or_default().push(g)),
                None => self.groups_unanchored.push(g),
            }
        }
    }

    /// Where the pods holding anti-affinity terms count this session.
    pub fn open(&mut self, s: &Session, pods: &mut Pods) {
        self.prepared = None;
        self.groups.open(s, pods);
    }

    /// Whether task `t` has required terms of its own.
    pub fn has_terms(&self, t: u32) -> bool {
        !(self.affinity[t as usize].is_empty() && self.anti[t as usize].is_empty())
    }

    /// Whether some pod has a required anti-affinity term.
    pub fn any_anti(&self) -> bool {
        !self.groups.groups.is_empty()
    }

    /// Pod `p` moved from node `from` to `to`.
    pub fn shift(&mut self, s: &Session, pods: &mut Pods, p: u32, from: u32, to: u32) {
        self.groups.shift(s, pods, p, from, to);
    }

    fn prepare(&mut self, s: &Session, pods: &mut Pods, t: u32) {
        if self.prepared.as_ref().is_some_and(|p| p.task == t && p.epoch == pods.epoch) {
            return;
        }
        // Domains holding a pod counter `c` counts, on key `k`.
        let held = |pods: &mut Pods, c: usize, k: u32| -> Held {
            let held = pods.per_domain(s, c, k).iter().map(|&n| n > 0).collect();
            (pods.domains(s, k).clone(), held)
        };
        let terms = &self.affinity[t as usize];
        let affinity = (!terms.is_empty()).then(|| {
            let filter: Filter = terms.iter().map(|x| x.clause.clone()).collect();
            let c = pods.counter(s, &filter);
            let per_term: Vec<Held> = terms.iter().map(|x| held(pods, c, x.key)).collect();
            let anywhere = per_term.iter().any(|(_, h)| h.contains(&true));
            (per_term, !anywhere && pods.picks_all(s, &filter, t))
        });
        let mut anti = Vec::new();
        for x in &self.anti[t as usize] {
            let c = pods.counter(s, &vec![x.clause.clone()]);
            anti.push(held(pods, c, x.key));
        }
        let mut hit: Vec<usize> = self.groups_unanchored.clone();
        for kv in pods.labels(t) {
            hit.extend(self.groups_by_label.get(kv).into_iter().flatten());
        }
        hit.sort_unstable();
        hit.dedup();
        let mut closed: Vec<Held> = Vec::new();
        for g in hit {
            let (clause, key, per_domain) = &self.groups.groups[g];
            if per_domain.is_empty() || !pods.picks(s, clause, t) {
                continue;
            }
            let doms = pods.domains(s, *key).clone();
            let at = match closed.iter().position(|(d, _)| Arc::ptr_eq(d, &doms)) {
                Some(at) => at,
                None => {
                    let count = doms.count;
                    closed.push((doms, vec![false; count]));
                    closed.len() - 1
                }
            };
            for &(d, n) in per_domain {
                closed[at].1[d as usize] |= n > 0;
            }
        }
        self.prepared = Some(Prepared { task: t, epoch: pods.epoch, affinity, anti, closed });
    }

    /// Whether the filter has anything to say about task `t`.
    pub fn applies(&self, t: u32) -> bool {
        self.has_terms(t) || self.any_anti()
    }

    /// The filter for task `t` on node `n`.
    pub fn check(&mut self, s: &Session, pods: &mut Pods, t: u32, n: u32) -> Result<(), Unfit> {
        self.prepare(s, pods, t);
        let p = self.prepared.as_ref().expect("prepared");
        let n = n as usize;
        if let Some((per_term, free)) = &p.affinity {
            let mut all = true;
            for (doms, held) in per_term {
                let d = doms.of_node[n];
                if d == NONE {
                    return Err(self.fixed[0].clone());
                }
                all &= held[d as usize];
            }
            if !all && !free {
                return Err(self.fixed[0].clone());
            }
        }
        for (doms, held) in &p.anti {
            let d = doms.of_node[n];
            if d != NONE && held[d as usize] {
                return Err(self.fixed[1].clone());
            }
        }
        for (doms, closed) in &p.closed {
            let d = doms.of_node[n];
            if d != NONE && closed[d as usize] {
                return Err(self.fixed[2].clone());
            }
        }
        Ok(())
    }
}
