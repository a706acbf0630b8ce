//! The simulator: replays manifests through scheduling cycles with a minimal
//! kubelet (bound pods start, `tephra.io/duration` pods complete), Volcano's
//! job and podgroup controllers (pods of admitted Jobs are created; plain
//! pods get a PodGroup), and arrivals delayed by `tephra.io/arrive-at`.

use crate::manifest::{Object, Timed, DURATION};
use crate::model::*;
use crate::report::{CycleReport, QueueRow, ReservationRow};
use crate::resource::ResourceList;
use crate::scheduler::Scheduler;
use crate::session::{Decision, Outcome};
use crate::wasm::contract::JobPhase;
use std::collections::HashMap;

/// Scheduler names whose pods tephra schedules.
pub const SCHEDULER_NAMES: [&str; 2] = ["volcano", "tephra"];

/// Simulation settings.
#[derive(Clone, Debug)]
pub struct Options {
    pub max_cycles: usize,
    /// Simulated seconds per cycle (Volcano's schedule period).
    pub period: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options { max_cycles: 50, period: 1.0 }
    }
}

/// A running simulation.
pub struct Simulation {
    pub cluster: Cluster,
    pub scheduler: Scheduler,
    future: Vec<Timed>,
    pub time: f64,
    pub cycle: usize,
    started: HashMap<String, f64>,
    options: Options,
}

impl Simulation {
    /// A simulation of manifests (with `root` and `default` queues created
    /// as Volcano's scheduler does).
    pub fn new(objects: Vec<Timed>, scheduler: Scheduler, options: Options) -> Self {
        let mut cluster = Cluster::default();
        cluster.ensure_default_queues();
        let mut sim = Self::from_cluster(cluster, scheduler, options);
        sim.future = objects;
        sim.arrive(&mut Vec::new());
        sim
    }

    /// A simulation continuing from a given cluster state.
    pub fn from_cluster(cluster: Cluster, scheduler: Scheduler, options: Options) -> Self {
        Simulation { cluster, scheduler, future: Vec::new(), time: 0.0, cycle: 0, started: HashMap::new(), options }
    }

    /// Adds objects whose arrival time has come; returns their names.
    fn arrive(&mut self, names: &mut Vec<String>) {
        let now = self.time;
        let (due, later): (Vec<Timed>, Vec<Timed>) =
            std::mem::take(&mut self.future).into_iter().partition(|t| t.at <= now + 1e-9);
        self.future = later;
        for t in due {
            let c = &mut self.cluster;
            match t.object {
                Object::Node(n) => {
                    names.push(format!("node {}", n.name));
                    c.nodes.retain(|x| x.name != n.name);
                    c.nodes.push(n);
                }
                Object::Queue(q) => {
                    names.push(format!("queue {}", q.name));
                    c.queues.retain(|x| x.name != q.name);
                    c.queues.push(q);
                }
                Object::PodGroup(g) => {
                    names.push(format!("podgroup {}", g.key()));
                    c.podgroups.retain(|x| x.key() != g.key());
                    c.podgroups.push(g);
                }
                Object::Pod(p) => {
                    names.push(format!("pod {}", p.key()));
                    c.pods.retain(|x| x.key() != p.key());
                    c.pods.push(p);
                }
                Object::PriorityClass(n, p) => {
                    c.priority_classes.insert(n, p);
                }
                Object::Config(_) => {}
            }
        }
    }

    /// Volcano's controllers: pods for admitted Jobs, PodGroups for plain pods.
    fn controllers(&mut self) {
        let c = &mut self.cluster;
        let mut created = Vec::new();
        for g in c.podgroups.iter().filter(|g| g.phase != Phase::Pending && !g.job_templates.is_empty()) {
            for tpl in &g.job_templates {
                if !c.pods.iter().any(|p| p.namespace == tpl.namespace && p.name == tpl.name) {
                    created.push(tpl.clone());
                }
            }
        }
        if !created.is_empty() {
            c.pods.extend(created);
        }
        let mut groups = Vec::new();
        let orphan = |p: &Pod| p.group.is_none() && SCHEDULER_NAMES.contains(&p.scheduler_name.as_str());
        // Mutable access counts as a whole change of the pods: only when needed.
        let orphans: Vec<usize> = (0..c.pods.len()).filter(|&i| orphan(&c.pods[i])).collect();
        for i in orphans {
            let p = &mut c.pods[i];
            let name = format!("podgroup-{}", p.name);
            p.group = Some(name.clone());
            groups.push(PodGroup {
                namespace: p.namespace.clone(),
                name,
                queue: p
                    .annotations
                    .get("scheduling.volcano.sh/queue-name")
                    .cloned()
                    .unwrap_or_else(|| "default".into()),
                min_member: 1,
                min_resources: Some(p.requests.clone()),
                priority_class: p.priority_class.clone(),
                created: p.created,
                ..Default::default()
            });
        }
        if !groups.is_empty() {
            c.podgroups.extend(groups);
        }
        // Admission resolves pod priority from its class, as the API server does.
        for i in 0..c.pods.len() {
            if c.pods[i].priority.is_none() {
                if let Some(v) =
                    c.pods[i].priority_class.as_deref().and_then(|n| c.priority_classes.get(n)).map(|p| p.value)
                {
                    c.pods[i].priority = Some(v);
                }
            }
        }
    }

    /// The kubelet: bound pods start, timed pods finish, evicted pods go.
    fn kubelet(&mut self, r: &mut CycleReport) {
        let now = self.time;
        let mut gone = Vec::new();
        for i in 0..self.cluster.pods.len() {
            let p = &self.cluster.pods[i];
            if p.deleting {
                gone.push(p.key());
                continue;
            }
            if p.node.is_some() && p.phase == PodPhase::Pending {
                self.started.insert(p.key(), now);
                r.started.push(p.key());
                let p = self.cluster.pods.status_mut(i);
                *p.phase = PodPhase::Running;
                *p.started = Some((now * 1000.0) as i64);
            } else if p.phase == PodPhase::Running {
                let dur = p.annotations.get(DURATION).and_then(|d| d.parse::<f64>().ok());
                let start = *self.started.entry(p.key()).or_insert(now);
                if dur.is_some_and(|d| now - start >= d - 1e-9) {
                    r.completed.push(p.key());
                    *self.cluster.pods.status_mut(i).phase = PodPhase::Succeeded;
                }
            }
        }
        // Evicted pods of a Volcano Job come back as pending pods (the job
        // controller restarts them); others are simply deleted.
        let templates: HashMap<String, Pod> =
            self.cluster.podgroups.iter().flat_map(|g| g.job_templates.iter().map(|t| (t.key(), t.clone()))).collect();
        if !gone.is_empty() {
            self.cluster.pods.retain(|p| !gone.contains(&p.key()));
        }
        for key in gone {
            if let Some(t) = templates.get(&key) {
                let fresh = Pod {
                    node: None,
                    nominated_node: None,
                    phase: PodPhase::Pending,
                    deleting: false,
                    started: None,
                    ..t.clone()
                };
                self.cluster.pods.push(fresh);
                r.restarted.push(key);
            }
        }
    }

    /// Applies a session's decisions and updates PodGroup phases.
    fn apply(&mut self, out: &Outcome, r: &mut CycleReport) {
        let names = &out.names;
        for d in &out.decisions {
            match d {
                Decision::Bind { task, node } => {
                    let pod = self.cluster.pods.status_mut(out.extra.task_pod[*task as usize]);
                    *pod.node = Some(names.nodes[*node as usize].clone());
                    *pod.nominated_node = None;
                    r.binds.push((names.tasks[*task as usize].clone(), names.nodes[*node as usize].clone()));
                }
                Decision::Nominate { task, node } => {
                    let pod = self.cluster.pods.status_mut(out.extra.task_pod[*task as usize]);
                    *pod.nominated_node = Some(names.nodes[*node as usize].clone());
                }
                Decision::Evict { task, reason } => {
                    let pod = self.cluster.pods.status_mut(out.extra.task_pod[*task as usize]);
                    *pod.deleting = true;
                    r.evictions.push((
                        names.tasks[*task as usize].clone(),
                        pod.node.clone().unwrap_or_default(),
                        reason.clone(),
                    ));
                }
            }
        }
        for &(t, n) in &out.pipelined {
            r.pipelined.push((names.tasks[t as usize].clone(), names.nodes[n as usize].clone()));
        }
        for (j, &pg) in out.extra.job_pg.iter().enumerate() {
            let phase = out.job_phase[j];
            let admitted = self.cluster.podgroups[pg].phase == Phase::Pending && phase == JobPhase::Inqueue;
            if admitted {
                r.admitted.push(self.cluster.podgroups[pg].key());
            }
            if out.conditions[j].is_none() && !admitted {
                continue;
            }
            let g = self.cluster.podgroups.status_mut(pg);
            if out.conditions[j].is_some() {
                *g.condition = out.conditions[j].clone();
            }
            if admitted {
                *g.phase = Phase::Inqueue;
            }
        }
        for gi in 0..self.cluster.podgroups.len() {
            let g = &self.cluster.podgroups[gi];
            let pods: Vec<&Pod> = self
                .cluster
                .pods
                .iter()
                .filter(|p| p.namespace == g.namespace && p.group.as_deref() == Some(&g.name))
                .collect();
            let scheduled = pods.iter().filter(|p| p.node.is_some() || p.phase == PodPhase::Succeeded).count() as u32;
            let succeeded = pods.iter().filter(|p| p.phase == PodPhase::Succeeded).count();
            let new = if !pods.is_empty() && succeeded == pods.len() && g.job_templates.len() <= succeeded {
                Phase::Completed
            } else if scheduled >= g.min_member && scheduled > 0 {
                Phase::Running
            } else if g.phase == Phase::Running {
                Phase::Inqueue
            } else {
                g.phase
            };
            if new != g.phase {
                r.phases.push((g.key(), format!("{new:?}")));
                *self.cluster.podgroups.status_mut(gi).phase = new;
            }
        }
    }

    fn queue_rows(&self, out: &Outcome) -> Vec<QueueRow> {
        let dims = &out.dims;
        let mut rows = Vec::new();
        for (qi, q) in self.cluster.queues.iter().enumerate() {
            let mut allocated = ResourceList::new();
            for p in self.cluster.pods.iter().filter(|p| p.node.is_some() && p.phase != PodPhase::Succeeded) {
                let Some(g) = self
                    .cluster
                    .podgroups
                    .iter()
                    .find(|g| g.namespace == p.namespace && Some(&g.name) == p.group.as_ref())
                else {
                    continue;
                };
                if g.queue == q.name {
                    for (k, v) in &p.requests {
                        *allocated.entry(k.clone()).or_default() += v;
                    }
                }
            }
            // The session's queue ids follow the cluster's queue order.
            let (deserved, share) = match &out.queue_status {
                Some((_, d, s)) if qi < s.len() => {
                    let row = &d[qi * dims.len()..(qi + 1) * dims.len()];
                    let des: ResourceList = dims
                        .iter()
                        .zip(row)
                        .filter(|(n, v)| v.is_finite() && n.as_str() != "pods" && **v > 0.0)
                        .map(|(n, v)| (n.clone(), *v))
                        .collect();
                    (Some(des), Some(s[qi]))
                }
                _ => (None, None),
            };
            let jobs = self.cluster.podgroups.iter().filter(|g| g.queue == q.name).count();
            rows.push(QueueRow { name: q.name.clone(), allocated, deserved, share, jobs });
        }
        rows
    }

    /// Applies a session run elsewhere (on this cluster) as this simulation's
    /// first cycle.
    pub fn apply_outcome(&mut self, out: Outcome) -> CycleReport {
        self.cycle += 1;
        let mut r = CycleReport { cycle: self.cycle, time: self.time, ..Default::default() };
        self.apply(&out, &mut r);
        self.time += self.options.period;
        r
    }

    /// Runs one cycle; returns what happened.
    pub fn step(&mut self) -> CycleReport {
        self.cycle += 1;
        let mut r = CycleReport { cycle: self.cycle, time: self.time, ..Default::default() };
        self.arrive(&mut r.arrivals);
        self.kubelet(&mut r);
        self.controllers();
        let now_ms = (self.time * 1000.0) as i64;
        let out = self.scheduler.cycle(&self.cluster, &Default::default(), now_ms);
        self.apply(&out, &mut r);
        r.queues = self.queue_rows(&out);
        r.quota_plugin = out.queue_status.as_ref().map(|s| s.0.clone());
        for (t, fe) in &out.fit_errors {
            let pod = &self.cluster.pods[out.extra.task_pod[*t as usize]];
            let pipelined = out.pipelined.iter().any(|(p, _)| p == t);
            if pod.node.is_none() && !pipelined {
                r.pending.push((pod.key(), fe.summary()));
            }
        }
        for (j, reason) in &out.job_reasons {
            let g = &self.cluster.podgroups[out.extra.job_pg[*j as usize]];
            let no_pods =
                !self.cluster.pods.iter().any(|p| p.namespace == g.namespace && p.group.as_ref() == Some(&g.name));
            let reason = if no_pods && !g.job_templates.is_empty() && g.phase != Phase::Pending {
                "admitted; its job controller creates the pods next cycle".to_string()
            } else {
                reason.clone()
            };
            r.pending.push((out.names.jobs[*j as usize].clone(), reason));
        }
        r.pending.sort();
        r.faults = out.faults.iter().map(|f| format!("{} {}: {}", f.plugin, f.point, f.message)).collect();
        r.notices = std::mem::take(&mut self.scheduler.notices);
        r.shadow = out.shadow_diffs.clone();
        r.targets = out.reservations.targets.clone();
        r.reservations = out
            .reservation_status
            .iter()
            .map(|q| ReservationRow {
                queue: q.queue.clone(),
                nodes: q.nodes.clone(),
                idle: out.dims.iter().cloned().zip(q.idle.iter().copied()).filter(|(_, v)| *v > 0.0).collect(),
                refused: q.refused.clone(),
            })
            .collect();
        self.time += self.options.period;
        r
    }

    /// Whether anything can still change without new input.
    pub fn settled(&self, last: &CycleReport) -> bool {
        self.future.is_empty()
            && last.is_quiet()
            && !self.cluster.pods.iter().any(|p| {
                (p.phase == PodPhase::Running && p.annotations.contains_key(DURATION))
                    || p.deleting
                    || (p.node.is_some() && p.phase == PodPhase::Pending)
            })
    }

    /// Whether the run ended settled (rather than at the cycle limit).
    pub fn settled_after(&self, last: Option<&CycleReport>) -> bool {
        last.is_some_and(|r| self.settled(r))
    }

    /// Runs until settled or `max_cycles`.
    pub fn run(&mut self) -> Vec<CycleReport> {
        let mut reports = Vec::new();
        while self.cycle < self.options.max_cycles {
            let r = self.step();
            let done = self.settled(&r);
            reports.push(r);
            if done {
                break;
            }
        }
        reports
    }
}
