//! PodTopologySpread's filter (`whenUnsatisfiable: DoNotSchedule`), with
//! kube-scheduler's rules and messages. Per constraint, the pods of the
//! task's namespace its selector picks are counted per domain over the
//! nodes that carry every constraint's key and that the constraint's
//! policies admit (`nodeAffinityPolicy`, `nodeTaintsPolicy`). A node
//! fits when, constraint by constraint, it has the key and
//! `count(its domain) + (1 if the task matches) - min(count)` is at most
//! `maxSkew`; the minimum is 0 while fewer domains than `minDomains` exist.

use std::sync::Arc;
use tephra_sdk::pods::{Constraint, Domains, Pods};
use tephra_sdk::{Session, Unfit, NONE};

pub const SKEW: &str = "node(s) didn't match pod topology spread constraints";
pub const MISSING: &str = "node(s) didn't match pod topology spread constraints (missing required label)";

/// Per constraint: its key's domains, the counts per domain over the
/// admitted nodes, the minimum, and whether the task itself matches.
struct Prepared {
    task: u32,
    epoch: u64,
    counts: Vec<(Arc<Domains>, Vec<u32>, u32, bool)>,
}

pub struct Spreads {
    of_task: Vec<Vec<Constraint>>,
    prepared: Option<Prepared>,
    pub fixed: [Unfit; 2],
}

impl Default for Spreads {
    fn default() -> Self {
        Spreads { of_task: Vec::new(), prepared: None, fixed: [Unfit::new(SKEW), Unfit::unresolvable(MISSING)] }
    }
}

impl Spreads {
    /// Indexes the tasks' hard constraints (they last while sessions continue).
    pub fn index(&mut self, s: &Session) {
        self.of_task = Constraint::of_tasks(s, true);
    }

    pub fn open(&mut self) {
        self.prepared = None;
    }

    pub fn applies(&self, t: u32) -> bool {
        !self.of_task[t as usize].is_empty()
    }

    /// `admits(node, honor_affinity, honor_taints)`: the task's node
    /// affinity and taint checks, as the policies ask for them; `open`: the
    /// task has no node selector or required node affinity.
    fn prepare(
        &mut self,
        s: &Session,
        pods: &mut Pods,
        t: u32,
        admits: &dyn Fn(usize, bool, bool) -> bool,
        open: bool,
    ) {
        if self.prepared.as_ref().is_some_and(|p| p.task == t && p.epoch == pods.epoch) {
            return;
        }
        let cs = &self.of_task[t as usize];
        let counters: Vec<usize> = cs.iter().map(|c| pods.counter(s, &vec![c.clause.clone()])).collect();
        // The usual case, one constraint that every node with its key
        // admits: the counter's own per-domain counts, every domain seen.
        if let ([c], [counter]) = (cs.as_slice(), counters.as_slice()) {
            if (open || !c.honor_affinity) && !c.honor_taints {
                let count = pods.per_domain(s, *counter, c.key).to_vec();
                let min = count.iter().copied().min().unwrap_or(u32::MAX);
                let min = if (count.len() as u32) < c.min_domains { 0 } else { min };
                let counts = vec![(pods.domains(s, c.key).clone(), count, min, pods.picks(s, &c.clause, t))];
                self.prepared = Some(Prepared { task: t, epoch: pods.epoch, counts });
                return;
            }
        }
        let doms: Vec<Arc<Domains>> = cs.iter().map(|c| pods.domains(s, c.key).clone()).collect();
        let mut counts: Vec<(Vec<u32>, Vec<bool>)> =
            doms.iter().map(|d| (vec![0; d.count], vec![false; d.count])).collect();
        for n in 0..s.nodes() {
            if doms.iter().any(|d| d.of_node[n] == NONE) {
                continue;
            }
            for (i, c) in cs.iter().enumerate() {
                if (c.honor_affinity || c.honor_taints) && !admits(n, c.honor_affinity, c.honor_taints) {
                    continue;
                }
                let d = doms[i].of_node[n] as usize;
                counts[i].0[d] += pods.counters[counters[i]].per_node[n];
                counts[i].1[d] = true;
            }
        }
        let counts = counts
            .into_iter()
            .zip(cs)
            .zip(doms)
            .map(|(((count, seen), c), doms)| {
                let domains = seen.iter().filter(|&&x| x).count();
                let min = count.iter().zip(&seen).filter(|(_, &x)| x).map(|(&n, _)| n).min().unwrap_or(u32::MAX);
                let min = if (domains as u32) < c.min_domains { 0 } else { min };
                (doms, count, min, pods.picks(s, &c.clause, t))
            })
            .collect();
        self.prepared = Some(Prepared { task: t, epoch: pods.epoch, counts });
    }

    /// The filter for task `t` on node `n`.
    pub fn check(
        &mut self,
        s: &Session,
        pods: &mut Pods,
        t: u32,
        n: u32,
        admits: &dyn Fn(usize, bool, bool) -> bool,
        open: bool,
    ) -> Result<(), Unfit> {
        self.prepare(s, pods, t, admits, open);
        let p = self.prepared.as_ref().expect("prepared");
        for (c, (doms, count, min, me)) in self.of_task[t as usize].iter().zip(&p.counts) {
            let d = doms.of_node[n as usize];
            if d == NONE {
                return Err(self.fixed[1].clone());
            }
            let skew = count[d as usize] as i64 + *me as i64 - *min as i64;
            if skew > c.max_skew as i64 {
                return Err(self.fixed[0].clone());
            }
        }
        Ok(())
    }
}
