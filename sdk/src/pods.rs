//! What pod placement rules read about pods (tasks and residents): labels,
//! namespaces, where each pod counts, topology domains, and counters of the
//! pods a selector picks, per node and per domain, kept current by events.
//!
//! Pods count on a node while they hold it in the session: allocated,
//! pipelined, binding, bound or running. A releasing pod (a preemption
//! victim) no longer counts, so a preemptor is judged as it would be
//! once its victims are gone.

use crate::session::{Session, NONE};
use crate::types::TaskStatus;
use crate::types::{PodTerm, Requirement, Snapshot};
use std::collections::HashMap;
use std::sync::Arc;

/// A label requirement with its operator read once.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Req {
    In(u32, Vec<u32>),
    NotIn(u32, Vec<u32>),
    Exists(u32),
    DoesNotExist(u32),
    /// An operator Kubernetes would refuse: matches nothing.
    Invalid,
}

/// The namespaces a clause looks in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Namespaces {
    All,
    /// Sorted string ids.
    Some(Vec<u32>),
}

/// One selector over pods: every requirement, in one of the namespaces.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Clause {
    pub reqs: Vec<Req>,
    /// No label selector: matches no pod.
    pub nothing: bool,
    pub namespaces: Namespaces,
}

impl Clause {
    /// A clause from a snapshot selector (`nothing`: there was none).
    pub fn new(s: &Session, reqs: &[Requirement], nothing: bool, namespaces: Namespaces) -> Clause {
        let reqs = reqs
            .iter()
            .map(|r| match (s.str(r.operator), r.values.is_empty()) {
                ("In", false) => Req::In(r.key, r.values.clone()),
                ("NotIn", false) => Req::NotIn(r.key, r.values.clone()),
                ("Exists", true) => Req::Exists(r.key),
                ("DoesNotExist", true) => Req::DoesNotExist(r.key),
                _ => Req::Invalid,
            })
            .collect();
        Clause { reqs, nothing, namespaces }
    }

    /// The selector of a pod (anti-)affinity term, in the namespaces the
    /// host resolved for it.
    pub fn of_term(s: &Session, t: &PodTerm) -> Clause {
        let ns = if t.all_namespaces {
            Namespaces::All
        } else {
            let mut ns = t.namespaces.clone();
            ns.sort_unstable();
            Namespaces::Some(ns)
        };
        Clause::new(s, &t.selector, t.matches_nothing, ns)
    }

    /// A label (key, value) every pod the clause picks carries, for lookups.
    fn anchor(&self) -> Option<(u32, &[u32])> {
        self.reqs.iter().find_map(|r| match r {
            Req::In(k, vs) => Some((*k, vs.as_slice())),
            _ => None,
        })
    }
}

/// Clauses that all must pick a pod for a counter to count it.
pub type Filter = Vec<Clause>;

/// Pods a filter picks: per node, and per domain of the keys asked about.
pub struct Counter {
    filter: Filter,
    pub per_node: Vec<u32>,
    /// (topology key, per domain of that key).
    per_domain: Vec<(u32, Vec<u32>)>,
}

/// The domains of one topology key: per node its domain (`NONE`: the node
/// lacks the key), and how many there are.
pub struct Domains {
    pub of_node: Vec<u32>,
    pub count: usize,
}

/// The pod index of a session.
#[derive(Default)]
pub struct Pods {
    tasks: usize,
    /// Per pod, its (key, value) labels sorted by key: `labels[start[p]..start[p + 1]]`.
    start: Vec<u32>,
    labels: Vec<(u32, u32)>,
    /// Where each task counts now (`NONE`: nowhere).
    placed: Vec<u32>,
    /// Per topology key asked about (a handful: a scan beats hashing).
    domains: Vec<(u32, Arc<Domains>)>,
    pub counters: Vec<Counter>,
    by_filter: HashMap<Filter, usize>,
    /// Counters by a label their pods carry; those without one aside.
    by_label: HashMap<(u32, u32), Vec<usize>>,
    unanchored: Vec<usize>,
    /// Pods by label, built when the first counter is.
    pods_with: Option<HashMap<(u32, u32), Vec<u32>>>,
    /// Bumped by every change of where a pod counts.
    pub epoch: u64,
}

/// Whether a task in `status` holds its node for placement rules.
pub fn counts(status: TaskStatus) -> bool {
    use TaskStatus::*;
    matches!(status, Allocated | Pipelined | Binding | Bound | Running)
}

impl Pods {
    /// Indexes labels (they last while sessions continue).
    pub fn index(&mut self, snap: &Snapshot) {
        let pods = snap.task_job.len() + snap.resident_node.len();
        let mut rows: Vec<(u32, u32, u32)> =
            snap.pod_labels.iter().filter(|l| (l.owner as usize) < pods).map(|l| (l.owner, l.key, l.value)).collect();
        rows.sort_unstable();
        self.start = vec![0; pods + 1];
        for &(p, _, _) in &rows {
            self.start[p as usize + 1] += 1;
        }
        for p in 0..pods {
            self.start[p + 1] += self.start[p];
        }
        self.labels = rows.into_iter().map(|(_, k, v)| (k, v)).collect();
        self.tasks = snap.task_job.len();
    }

    /// Starts a session: where tasks count now; counters and domains afresh.
    pub fn open(&mut self, s: &Session) {
        self.placed =
            (0..s.tasks() as u32).map(|t| if counts(s.task_status(t)) { s.task_node(t) } else { NONE }).collect();
        self.domains.clear();
        self.counters.clear();
        self.by_filter.clear();
        self.by_label.clear();
        self.unanchored.clear();
        self.pods_with = None;
        self.epoch += 1;
    }

    /// Tasks and residents (0 before [`Pods::index`]).
    pub fn count(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// The node `pod` counts on (`NONE`: none).
    pub fn node(&self, s: &Session, pod: u32) -> u32 {
        match (pod as usize).checked_sub(self.tasks) {
            None => self.placed[pod as usize],
            Some(r) => s.snap.resident_node[r],
        }
    }

    /// The namespace of `pod`, a string id.
    pub fn namespace(&self, s: &Session, pod: u32) -> u32 {
        match (pod as usize).checked_sub(self.tasks) {
            None => s.snap.task_namespace[pod as usize],
            Some(r) => s.snap.resident_namespace[r],
        }
    }

    /// The labels of `pod` as (key, value) string ids, sorted by key.
    pub fn labels(&self, pod: u32) -> &[(u32, u32)] {
        let p = pod as usize;
        &self.labels[self.start[p] as usize..self.start[p + 1] as usize]
    }

    fn label(&self, pod: u32, key: u32) -> Option<u32> {
        let l = self.labels(pod);
        l.binary_search_by_key(&key, |&(k, _)| k).ok().map(|i| l[i].1)
    }

    /// `labels.Selector.Matches` plus the namespace, for one clause.
    pub fn picks(&self, s: &Session, c: &Clause, pod: u32) -> bool {
        if c.nothing {
            return false;
        }
        if let Namespaces::Some(ns) = &c.namespaces {
            if ns.binary_search(&self.namespace(s, pod)).is_err() {
                return false;
            }
        }
        c.reqs.iter().all(|r| match r {
            Req::In(k, vs) => self.label(pod, *k).is_some_and(|v| vs.contains(&v)),
            Req::NotIn(k, vs) => self.label(pod, *k).is_none_or(|v| !vs.contains(&v)),
            Req::Exists(k) => self.label(pod, *k).is_some(),
            Req::DoesNotExist(k) => self.label(pod, *k).is_none(),
            Req::Invalid => false,
        })
    }

    /// Whether every clause of `f` picks `pod`.
    pub fn picks_all(&self, s: &Session, f: &Filter, pod: u32) -> bool {
        f.iter().all(|c| self.picks(s, c, pod))
    }

    /// The domains of topology key `key`.
    pub fn domains(&mut self, s: &Session, key: u32) -> &Arc<Domains> {
        let at = match self.domains.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                let mut ids: HashMap<u32, u32> = HashMap::new();
                let mut of_node = vec![NONE; s.nodes()];
                for l in s.snap.node_labels.iter().filter(|l| l.key == key) {
                    let next = ids.len() as u32;
                    if let Some(n) = of_node.get_mut(l.owner as usize) {
                        *n = *ids.entry(l.value).or_insert(next);
                    }
                }
                self.domains.push((key, Arc::new(Domains { of_node, count: ids.len() })));
                self.domains.len() - 1
            }
        };
        &self.domains[at].1
    }

    /// The counter of `filter`, made (from every pod on a node) on first use.
    pub fn counter(&mut self, s: &Session, filter: &Filter) -> usize {
        if let Some(&c) = self.by_filter.get(filter) {
            return c;
        }
        let mut per_node = vec![0; s.nodes()];
        let anchor = filter.iter().find_map(Clause::anchor);
        let mut add = |pods: &Pods, p: u32| {
            let n = pods.node(s, p);
            if n != NONE && pods.picks_all(s, filter, p) {
                per_node[n as usize] += 1;
            }
        };
        match anchor {
            Some((key, values)) => {
                let with = self.pods_with.get_or_insert_with(|| {
                    let mut m: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
                    for p in 0..self.start.len() - 1 {
                        let (a, b) = (self.start[p] as usize, self.start[p + 1] as usize);
                        for &kv in &self.labels[a..b] {
                            m.entry(kv).or_default().push(p as u32);
                        }
                    }
                    m
                });
                let pods: Vec<u32> =
                    values.iter().flat_map(|&v| with.get(&(key, v)).into_iter().flatten()).copied().collect();
                pods.into_iter().for_each(|p| add(self, p));
            }
            None => (0..self.count() as u32).for_each(|p| add(self, p)),
        }
        let c = self.counters.len();
        match anchor {
            Some((key, values)) => values.iter().for_each(|&v| self.by_label.entry((key, v)).or_default().push(c)),
            None => self.unanchored.push(c),
        }
        self.counters.push(Counter { filter: filter.clone(), per_node, per_domain: Vec::new() });
        self.by_filter.insert(filter.clone(), c);
        c
    }

    /// Counter `c`'s pods per domain of `key` (kept current from now on).
    pub fn per_domain(&mut self, s: &Session, c: usize, key: u32) -> &[u32] {
        let at = match self.counters[c].per_domain.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                let d = self.domains(s, key).clone();
                let mut v = vec![0; d.count];
                for (n, &dom) in d.of_node.iter().enumerate() {
                    if dom != NONE {
                        v[dom as usize] += self.counters[c].per_node[n];
                    }
                }
                self.counters[c].per_domain.push((key, v));
                self.counters[c].per_domain.len() - 1
            }
        };
        &self.counters[c].per_domain[at].1
    }

    /// Brings task `t` to where it counts now; `moved` gets its old and new
    /// node when they differ.
    pub fn settle(&mut self, s: &Session, t: u32) -> Option<(u32, u32)> {
        let now = if counts(s.task_status(t)) { s.task_node(t) } else { NONE };
        let was = std::mem::replace(&mut self.placed[t as usize], now);
        if was == now {
            return None;
        }
        self.epoch += 1;
        if !self.counters.is_empty() {
            let mut hit: Vec<usize> = self.unanchored.clone();
            for kv in self.labels(t) {
                hit.extend(self.by_label.get(kv).into_iter().flatten());
            }
            hit.sort_unstable();
            hit.dedup();
            for c in hit {
                if self.picks_all(s, &self.counters[c].filter, t) {
                    self.shift(c, was, now);
                }
            }
        }
        Some((was, now))
    }

    fn shift(&mut self, c: usize, from: u32, to: u32) {
        for (n, up) in [(from, false), (to, true)] {
            if n == NONE {
                continue;
            }
            let bump = |x: &mut u32| if up { *x += 1 } else { *x -= 1 };
            let counter = &mut self.counters[c];
            bump(&mut counter.per_node[n as usize]);
            for (key, per) in counter.per_domain.iter_mut() {
                let dom = self.domains.iter().find(|(k, _)| k == key).map_or(NONE, |(_, d)| d.of_node[n as usize]);
                if dom != NONE {
                    bump(&mut per[dom as usize]);
                }
            }
        }
    }
}

/// Where the pods of a group count: (domain, how many), only domains with some.
pub type Held = Vec<(u32, i64)>;

/// Pods' terms, identical ones grouped, with per domain of each group's
/// topology key how many pods holding the term count there (kept current
/// with [`TermGroups::shift`] as pods move).
pub struct TermGroups<T> {
    /// Per group: its term, its key, and the domains where pods holding it
    /// count, with how many (sparse: a group's pods sit in a few domains of
    /// thousands).
    pub groups: Vec<(T, u32, Held)>,
    /// Per pod, the groups of its terms.
    group_of: Vec<Vec<usize>>,
    index: HashMap<(u32, T), usize>,
}

impl<T: Clone + Eq + std::hash::Hash> TermGroups<T> {
    /// Groups for `pods` pods, none yet.
    pub fn new(pods: usize) -> Self {
        TermGroups { groups: Vec::new(), group_of: vec![Vec::new(); pods], index: HashMap::new() }
    }

    /// Pod `p` holds `term` on topology key `key`; returns its group.
    pub fn add(&mut self, p: u32, key: u32, term: T) -> usize {
        let groups = &mut self.groups;
        let g = *self.index.entry((key, term.clone())).or_insert_with(|| {
            groups.push((term, key, Vec::new()));
            groups.len() - 1
        });
        self.group_of[p as usize].push(g);
        g
    }

    /// Counts where the pods holding terms are at the start of a session.
    pub fn open(&mut self, s: &Session, pods: &mut Pods) {
        for (_, _, per) in &mut self.groups {
            per.clear();
        }
        for p in 0..self.group_of.len() as u32 {
            let n = pods.node(s, p);
            if n != NONE && !self.group_of[p as usize].is_empty() {
                self.shift(s, pods, p, NONE, n);
            }
        }
    }

    /// Pod `p` moved from node `from` to `to`.
    pub fn shift(&mut self, s: &Session, pods: &mut Pods, p: u32, from: u32, to: u32) {
        for &g in &self.group_of[p as usize] {
            let (_, key, per) = &mut self.groups[g];
            let of_node = &pods.domains(s, *key).of_node;
            for (node, delta) in [(from, -1), (to, 1)] {
                let Some(&d) = of_node.get(node as usize).filter(|&&d| d != NONE) else { continue };
                match per.iter().position(|&(x, _)| x == d) {
                    Some(i) => {
                        per[i].1 += delta;
                        if per[i].1 == 0 {
                            per.swap_remove(i);
                        }
                    }
                    None => per.push((d, delta)),
                }
            }
        }
    }
}

/// A task's topology spread constraint, its selector read as a clause over
/// the task's namespace.
pub struct Constraint {
    pub key: u32,
    pub max_skew: u32,
    /// 0: unset.
    pub min_domains: u32,
    pub honor_affinity: bool,
    pub honor_taints: bool,
    pub clause: Clause,
}

impl Constraint {
    /// Per task, its `DoNotSchedule` constraints (`hard`) or its
    /// `ScheduleAnyway` ones.
    pub fn of_tasks(s: &Session, hard: bool) -> Vec<Vec<Constraint>> {
        let mut of_task: Vec<Vec<Constraint>> = (0..s.tasks()).map(|_| Vec::new()).collect();
        for c in s.snap.task_spread.iter().filter(|c| c.hard == hard) {
            let ns = Namespaces::Some(vec![s.snap.task_namespace[c.task as usize]]);
            if let Some(v) = of_task.get_mut(c.task as usize) {
                v.push(Constraint {
                    key: c.topology_key,
                    max_skew: c.max_skew,
                    min_domains: c.min_domains,
                    honor_affinity: c.honor_node_affinity,
                    honor_taints: c.honor_taints,
                    clause: Clause::new(s, &c.selector, c.matches_nothing, ns),
                });
            }
        }
        of_task
    }
}
