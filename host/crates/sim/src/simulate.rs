//! The simulator: replays manifests through scheduling cycles with a minimal
//! kubelet (bound pods start, `tephra.io/duration` pods complete), Volcano's
//! job and podgroup controllers (pods of admitted Jobs are created; plain
//! pods get a PodGroup), and arrivals delayed by `tephra.io/arrive-at`.
//! [`Sim`] is the loop's driver; [`Simulation`] is the loop over it.

use crate::report::{CycleReport, ReservationRow};
use crate::workloads::SCHEDULER_NAMES;
use std::collections::{HashMap, HashSet};
use std::ops::{Deref, DerefMut};
use std::time::Duration;
use tephra_contract::JobPhase;
use tephra_model::cluster::*;
use tephra_model::storage;
use tephra_model::tracked::Tracked;
use tephra_readers::manifest::{Object, Timed, DURATION};
use tephra_scheduler::queues::queue_rows;
use tephra_scheduler::run::{Cycle, Driver, Loop};
use tephra_scheduler::Scheduler;
use tephra_session::session::{Decision, Outcome};

/// Simulation settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// The most cycles to run.
    pub max_cycles: usize,
    /// Simulated seconds per cycle (Volcano's schedule period).
    pub period: f64,
    /// Node labels HyperNodes are discovered from, highest tier first
    /// (none: only HyperNode objects).
    pub hypernode_labels: Vec<String>,
    /// After a cycle that changed nothing, the clock jumps to the cycle of
    /// the next arrival, completion or CronJob run instead of stepping
    /// through the quiet ones (trace replays). Policies that act on time
    /// alone (sla, reservation after a wait) then act at that next cycle.
    pub skip_idle: bool,
    /// A bound pod runs from the cycle that bound it, as on a cluster whose
    /// kubelets start pods at once (kwok's); otherwise (the default) the
    /// kubelet starts it at the next cycle, a period later, as a kubelet
    /// pulling and starting containers does at Volcano's 1 s period.
    pub start_on_bind: bool,
    /// Events are seen by the first cycle after them: an arrival or a pod's
    /// end at a cycle's very instant waits for the next one. A live
    /// scheduler's clock never meets them exactly (its cycles tick on their
    /// own; kwok starts a pod a moment after the bind, so it ends a moment
    /// after a cycle); the default treats them as simultaneous.
    pub live_clock: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_cycles: 50,
            period: 1.0,
            hypernode_labels: Vec::new(),
            skip_idle: false,
            start_on_bind: false,
            live_clock: false,
        }
    }
}

/// The simulated world: a clock, objects still to arrive, a kubelet and
/// Volcano's controllers.
pub struct Sim {
    future: Vec<Timed>,
    /// Simulated seconds since the start.
    pub time: f64,
    /// Cycles run.
    pub cycle: usize,
    started: HashMap<String, f64>,
    options: Options,
    /// The report of the cycle under way.
    report: CycleReport,
    /// Whether nothing could change any more after the last cycle.
    settled: bool,
    /// Stop once settled (a batch run); a live run goes on to `max_cycles`.
    pub stop_when_settled: bool,
    /// Sleep the period between cycles.
    pub realtime: bool,
    /// HyperNodes made from node labels (`Options::hypernode_labels`).
    discovered: std::collections::BTreeSet<String>,
    /// The workload controllers' memory.
    workloads: crate::workloads::Controllers,
    /// Trace jobs that completed: forgotten at the next cycle.
    done: Vec<(String, String)>,
}

/// A running simulation: the loop over a [`Sim`].
pub struct Simulation(pub Loop<Sim>);

impl Deref for Simulation {
    type Target = Loop<Sim>;
    fn deref(&self) -> &Loop<Sim> {
        &self.0
    }
}

impl DerefMut for Simulation {
    fn deref_mut(&mut self) -> &mut Loop<Sim> {
        &mut self.0
    }
}

impl Simulation {
    /// A simulation of manifests (with `root` and `default` queues created
    /// as Volcano's scheduler does).
    pub fn new(objects: Vec<Timed>, scheduler: Scheduler, options: Options) -> Self {
        let mut cluster = Cluster::default();
        cluster.ensure_default_queues();
        let mut sim = Self::from_cluster(cluster, scheduler, options);
        sim.0.driver.future = objects;
        // Latest first, each moment's objects in file order (a stable sort, reversed).
        sim.0.driver.future.reverse();
        sim.0.driver.future.sort_by(|a, b| b.at.total_cmp(&a.at));
        let (sim_driver, cluster) = (&mut sim.0.driver, &mut sim.0.cluster);
        sim_driver.arrive(cluster, &mut Vec::new());
        sim
    }

    /// A simulation continuing from a given cluster state (its running
    /// pods' durations count from now).
    pub fn from_cluster(cluster: Cluster, scheduler: Scheduler, options: Options) -> Self {
        let running = cluster.pods.iter().filter(|p| p.phase == PodPhase::Running).map(|p| (p.key(), 0.0)).collect();
        let sim = Sim {
            future: Vec::new(),
            time: 0.0,
            cycle: 0,
            started: running,
            options,
            report: CycleReport::default(),
            settled: false,
            stop_when_settled: true,
            realtime: false,
            discovered: Default::default(),
            workloads: Default::default(),
            done: Vec::new(),
        };
        Simulation(Loop::new(cluster, scheduler, sim))
    }

    /// A simulation continuing from `cluster` as it stands at `now`
    /// (seconds): running pods keep their start times.
    pub fn resume(cluster: Cluster, scheduler: Scheduler, options: Options, now: f64) -> Self {
        let mut sim = Self::from_cluster(cluster, scheduler, options);
        sim.0.driver.started.clear();
        sim.0.driver.time = now;
        sim
    }

    /// When the last object still to arrive does (0 when none).
    pub fn last_arrival(&self) -> f64 {
        self.driver.future.first().map_or(0.0, |t| t.at)
    }

    /// Cycles run so far.
    pub fn cycle(&self) -> usize {
        self.driver.cycle
    }

    /// Runs until settled or `max_cycles`.
    pub fn run(&mut self) -> Vec<CycleReport> {
        let mut reports = Vec::new();
        if self.driver.cycle >= self.driver.options.max_cycles {
            return reports;
        }
        self.0.run(|r| reports.push(r.clone()));
        reports
    }

    /// Whether anything can still change without new input.
    pub fn settled(&self, last: &CycleReport) -> bool {
        self.driver.settled_now(&self.cluster, last)
    }

    /// Whether the run ended settled (rather than at the cycle limit).
    pub fn settled_after(&self, last: Option<&CycleReport>) -> bool {
        last.is_some_and(|r| self.settled(r))
    }

    /// Applies a session run elsewhere (on this cluster) as this simulation's
    /// first cycle.
    pub fn apply_outcome(&mut self, out: Outcome) -> CycleReport {
        let Loop { cluster, driver, .. } = &mut self.0;
        driver.cycle += 1;
        driver.report = CycleReport { cycle: driver.cycle, time: driver.time, ..Default::default() };
        driver.apply_decisions(cluster, &out);
        driver.time += driver.options.period;
        std::mem::take(&mut driver.report)
    }
}

/// Adds `new` to `list`, each replacing the item of its key (an update):
/// one pass however many arrive, so reading 100k pods stays linear.
fn replace_or_add<T>(list: &mut Tracked<T>, new: Vec<T>, key: impl Fn(&T) -> String) {
    if new.is_empty() {
        return;
    }
    let incoming: HashSet<String> = new.iter().map(&key).collect();
    // Only a real replacement touches what is there.
    if list.iter().any(|x| incoming.contains(&key(x))) {
        list.retain(|x| !incoming.contains(&key(x)));
    }
    list.extend(new);
}

impl Sim {
    /// Adds objects whose arrival time has come; returns their names.
    fn arrive(&mut self, c: &mut Cluster, names: &mut Vec<String>) {
        // On the live clock, what arrives at this very instant waits.
        let now = if self.options.live_clock { self.time - 2e-9 } else { self.time };
        // `future` is sorted latest first: what is due is at its end.
        let first_later = self.future.partition_point(|t| t.at > now + 1e-9);
        let due = self.future.split_off(first_later);
        let (mut nodes, mut queues, mut groups, mut pods) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for t in due.into_iter().rev() {
            match t.object {
                Object::Node(n) => {
                    names.push(format!("node {}", n.name));
                    nodes.push(n);
                }
                Object::Queue(q) => {
                    names.push(format!("queue {}", q.name));
                    queues.push(q);
                }
                Object::PodGroup(g) => {
                    names.push(format!("podgroup {}", g.key()));
                    self.report.new_jobs.push((g.key(), g.queue.clone()));
                    groups.push(g);
                }
                Object::Pod(p) => {
                    names.push(format!("pod {}", p.key()));
                    if p.phase == PodPhase::Running {
                        self.started.insert(p.key(), now);
                    }
                    pods.push(*p);
                }
                Object::Config(_) => {}
                keyed => {
                    keyed.keep_in(c);
                }
            }
        }
        replace_or_add(&mut c.nodes, nodes, |n| n.name.clone());
        replace_or_add(&mut c.queues, queues, |q| q.name.clone());
        replace_or_add(&mut c.podgroups, groups, PodGroup::key);
        replace_or_add(&mut c.pods, pods, Pod::key);
    }

    /// Volcano's controllers: pods for admitted Jobs, PodGroups for plain
    /// pods (returned as (key, queue)).
    fn controllers(c: &mut Cluster) -> Vec<(String, String)> {
        let mut created = Vec::new();
        // Pods are made once, when the group is admitted; the kubelet makes
        // an evicted one again.
        let mut admitted = c.podgroups.iter().filter(|g| g.phase == Phase::Inqueue && !g.job_templates.is_empty());
        if let Some(first) = admitted.next() {
            let exists: HashSet<(&str, &str)> =
                c.pods.iter().map(|p| (p.namespace.as_str(), p.name.as_str())).collect();
            for g in std::iter::once(first).chain(admitted) {
                for tpl in &g.job_templates {
                    if !exists.contains(&(tpl.namespace.as_str(), tpl.name.as_str())) {
                        created.push(tpl.clone());
                    }
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
                network_topology: tephra_model::topology::NetworkTopology::from_annotations(&p.annotations),
                annotations: [(crate::workloads::OWNER.to_string(), format!("Pod/{}", p.name))].into(),
                ..Default::default()
            });
        }
        let made: Vec<(String, String)> = groups.iter().map(|g| (g.key(), g.queue.clone())).collect();
        if !groups.is_empty() {
            c.podgroups.extend(groups);
        }
        // A PodGroup made for a plain pod goes with it (owner-based clean-up;
        // the pods are indexed only when such a group exists).
        let pod_owned =
            |g: &PodGroup| g.annotations.get(crate::workloads::OWNER).is_some_and(|o| o.starts_with("Pod/"));
        if c.podgroups.iter().any(pod_owned) {
            let pods: HashSet<(&str, &str)> = c.pods.iter().map(|p| (p.namespace.as_str(), p.name.as_str())).collect();
            let orphaned = |g: &PodGroup| {
                g.annotations
                    .get(crate::workloads::OWNER)
                    .and_then(|o| o.strip_prefix("Pod/"))
                    .is_some_and(|pod| !pods.contains(&(g.namespace.as_str(), pod)))
            };
            if c.podgroups.iter().any(orphaned) {
                let keep: Vec<bool> = c.podgroups.iter().map(|g| !orphaned(g)).collect();
                let mut k = keep.iter();
                c.podgroups.retain(|_| *k.next().unwrap_or(&true));
            }
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
        made
    }

    /// The kubelet: bound pods start, timed pods finish, evicted pods go.
    fn kubelet(&mut self, c: &mut Cluster) {
        let limits = time_limits(c);
        let (r, started) = (&mut self.report, &mut self.started);
        let now = self.time;
        // On the live clock, a pod due to end at this very instant ends just after it.
        let tie = if self.options.live_clock { -1e-9 } else { 1e-9 };
        let mut gone = Vec::new();
        for i in 0..c.pods.len() {
            let p = &c.pods[i];
            if p.deleting {
                gone.push(p.key());
                continue;
            }
            if p.node.is_some() && p.phase == PodPhase::Pending {
                // A pod made again under a name that came running starts afresh.
                if !started.is_empty() {
                    started.remove(&p.key());
                }
                r.started.push(p.key());
                let p = c.pods.status_mut(i);
                *p.phase = PodPhase::Running;
                *p.started = Some((now * 1000.0) as i64);
            } else if p.phase == PodPhase::Running {
                let dur = p.annotations.get(DURATION).and_then(|d| d.parse::<f64>().ok());
                let limit = limits.as_ref().and_then(|l| pod_limit(l, p));
                if dur.is_none() && limit.is_none() {
                    continue;
                }
                let start = start_of(started, p, now);
                let (dur, limit_s) = (dur.unwrap_or(f64::INFINITY), limit.as_ref().map_or(f64::INFINITY, |(s, _)| *s));
                if limit_s < dur && now - start >= limit_s - tie {
                    let why = limit.map(|(_, why)| why).unwrap_or_default();
                    r.overran.push(format!("{} after {}s ({why})", p.key(), limit_s));
                    *c.pods.status_mut(i).phase = PodPhase::Failed;
                } else if now - start >= dur - tie {
                    r.completed.push(p.key());
                    *c.pods.status_mut(i).phase = PodPhase::Succeeded;
                }
            }
        }
        if gone.is_empty() {
            return;
        }
        // Evicted pods of a Volcano Job come back as pending pods (the job
        // controller restarts them); others are simply deleted.
        let templates: HashMap<String, &Pod> =
            c.podgroups.iter().flat_map(|g| g.job_templates.iter().map(|t| (t.key(), t))).collect();
        let mut fresh = Vec::new();
        for key in &gone {
            if let Some(t) = templates.get(key) {
                fresh.push(Pod {
                    node: None,
                    nominated_node: None,
                    phase: PodPhase::Pending,
                    deleting: false,
                    started: None,
                    ..(*t).clone()
                });
                r.restarted.push(key.clone());
            }
        }
        let gone: std::collections::HashSet<String> = gone.into_iter().collect();
        c.pods.retain(|p| !gone.contains(&p.key()));
        c.pods.extend(fresh);
    }

    /// Applies a session's decisions and updates PodGroup phases.
    fn apply_decisions(&mut self, c: &mut Cluster, out: &Outcome) {
        let r = &mut self.report;
        let names = &out.names;
        let tree = &out.extra.topology;
        for &(job, group, hn) in &out.domains {
            let mut who = names.jobs[job as usize].clone();
            if group != tephra_session::session::NONE {
                let tasks = &out.extra.subgroup_tasks[group as usize];
                let first = tasks.first().map(|&t| names.tasks[t as usize].as_str()).unwrap_or("");
                who = format!("{who} (subgroup of {first})");
            }
            let h = hn as usize;
            r.domains.push((who, format!("HyperNode {} (tier {})", tree.names[h], tree.tiers[h])));
        }
        // Volumes bound on first consumer are bound with the placement (the
        // simulator plays the volume controller and the provisioner too).
        let binds: Vec<(u32, usize, &str)> = out
            .decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Bind { task, node } => Some((
                    out.task_job[*task as usize],
                    out.extra.task_pod[*task as usize],
                    names.nodes[*node as usize].as_str(),
                )),
                _ => None,
            })
            .collect();
        let mut volumes = storage::pick_binds(c, &binds).into_iter();
        for d in &out.decisions {
            match d {
                Decision::Bind { task, node } => {
                    match volumes.next() {
                        Some(Ok(writes)) => {
                            for b in &writes {
                                storage::complete(c, b);
                                match b {
                                    storage::Bind::Volume { claim, volume } => {
                                        r.volumes.push(format!("claim {claim} bound to {volume}"))
                                    }
                                    storage::Bind::Provision { claim, node } => {
                                        r.volumes.push(format!("claim {claim} provisioned on {node}"))
                                    }
                                    storage::Bind::Devices(g) => r.devices.push(match &g.allocation {
                                        Some(a) => {
                                            let got: Vec<String> =
                                                a.results.iter().map(|r| format!("{}/{}", r.pool, r.device)).collect();
                                            format!("claim {} allocated {}", g.claim, got.join(", "))
                                        }
                                        None => format!("claim {} reserved for {}", g.claim, g.pod),
                                    }),
                                }
                            }
                        }
                        Some(Err(why)) => {
                            r.pending.push((names.tasks[*task as usize].clone(), why));
                            continue;
                        }
                        None => {}
                    }
                    let pod = c.pods.status_mut(out.extra.task_pod[*task as usize]);
                    *pod.node = Some(names.nodes[*node as usize].clone());
                    *pod.nominated_node = None;
                    if self.options.start_on_bind {
                        *pod.phase = PodPhase::Running;
                        *pod.started = Some((self.time * 1000.0) as i64);
                        self.started.remove(&names.tasks[*task as usize]);
                        r.started.push(names.tasks[*task as usize].clone());
                    }
                    r.binds.push((names.tasks[*task as usize].clone(), names.nodes[*node as usize].clone()));
                }
                Decision::Nominate { task, node } => {
                    let pod = c.pods.status_mut(out.extra.task_pod[*task as usize]);
                    *pod.nominated_node = Some(names.nodes[*node as usize].clone());
                }
                Decision::Evict { task, reason } => {
                    let pg = out.extra.job_pg[out.task_job[*task as usize] as usize];
                    r.eviction_queues.push(c.podgroups[pg].queue.clone());
                    let pod = c.pods.status_mut(out.extra.task_pod[*task as usize]);
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
            let admitted = c.podgroups[pg].phase == Phase::Pending && phase == JobPhase::Inqueue;
            if admitted {
                r.admitted.push(c.podgroups[pg].key());
            }
            if out.conditions[j].is_none() && !admitted {
                continue;
            }
            let g = c.podgroups.status_mut(pg);
            if out.conditions[j].is_some() {
                *g.condition = out.conditions[j].clone();
            }
            if admitted {
                *g.phase = Phase::Inqueue;
            }
        }
        let members = c.pods_by_group();
        let mut changed = Vec::new();
        for (gi, g) in c.podgroups.iter().enumerate() {
            let pods = members.get(&(g.namespace.as_str(), g.name.as_str())).map(Vec::as_slice).unwrap_or_default();
            let pods: Vec<&Pod> = pods.iter().map(|&i| &c.pods[i]).collect();
            let new = podgroup_phase(g, g.phase, &pods);
            if new != g.phase {
                r.phases.push((g.key(), format!("{new:?}")));
                if new == Phase::Completed && g.annotations.contains_key(tephra_readers::trace::TRACE_JOB) {
                    self.done.push((g.namespace.clone(), g.name.clone()));
                }
                changed.push((gi, new));
            }
        }
        drop(members);
        for (gi, new) in changed {
            *c.podgroups.status_mut(gi).phase = new;
        }
    }

    /// When the next thing happens on its own: an arrival, a timed pod's
    /// completion, a CronJob's run.
    fn next_event(&self, c: &Cluster) -> Option<f64> {
        let arrivals = self.future.last().map(|t| t.at).into_iter();
        let limits = time_limits(c);
        let completions = c.pods.iter().filter(|p| p.phase == PodPhase::Running).filter_map(|p| {
            let d = p.annotations.get(DURATION).and_then(|d| d.parse::<f64>().ok());
            let d = match (d, limits.as_ref().and_then(|l| pod_limit(l, p))) {
                (Some(d), Some((l, _))) => d.min(l),
                (d, l) => d.or(l.map(|l| l.0))?,
            };
            Some(start_of(&self.started, p, self.time) + d)
        });
        let cron = self.workloads.next_due().map(|t| t as f64);
        arrivals.chain(completions).chain(cron).reduce(f64::min)
    }

    /// Drops trace jobs that completed, with their pods.
    fn forget_done(&mut self, c: &mut Cluster) {
        if self.done.is_empty() {
            return;
        }
        let done: HashSet<(String, String)> = std::mem::take(&mut self.done).into_iter().collect();
        let gone = |ns: &str, g: Option<&str>| g.is_some_and(|g| done.contains(&(ns.to_string(), g.to_string())));
        let keep: Vec<bool> = c.pods.iter().map(|p| !gone(&p.namespace, p.group.as_deref())).collect();
        for (p, _) in c.pods.iter().zip(&keep).filter(|(_, k)| !**k) {
            self.started.remove(&p.key());
        }
        let mut k = keep.iter();
        c.pods.retain(|_| *k.next().unwrap_or(&true));
        c.podgroups.retain(|g| !gone(&g.namespace, Some(&g.name)));
    }

    /// Whether anything can still change without new input.
    fn settled_now(&self, c: &Cluster, last: &CycleReport) -> bool {
        self.future.is_empty()
            && last.is_quiet()
            // A CronJob always has a next run.
            && !c.workloads.iter().any(|w| w.kind == WorkloadKind::CronJob)
            && !c.pods.iter().any(|p| {
                (p.phase == PodPhase::Running && p.annotations.contains_key(DURATION))
                    || p.deleting
                    || (p.node.is_some() && p.phase == PodPhase::Pending)
            })
    }
}

impl Sim {
    /// Simulated seconds per cycle.
    pub fn period(&self) -> f64 {
        self.options.period
    }
}

impl Driver for Sim {
    type Report = CycleReport;

    fn prepare(&mut self, c: &mut Cluster) -> Option<i64> {
        self.cycle += 1;
        // Jobs that arrived before the first cycle count as its arrivals.
        let new_jobs = std::mem::take(&mut self.report.new_jobs);
        self.report = CycleReport { cycle: self.cycle, time: self.time, new_jobs, ..Default::default() };
        self.forget_done(c);
        let mut arrivals = Vec::new();
        self.arrive(c, &mut arrivals);
        self.report.arrivals = arrivals;
        self.kubelet(c);
        let done = self.workloads.reconcile(c, self.time as i64);
        self.report.made = done.made;
        self.report.made.extend(crate::workloads::ephemeral_claims(c));
        self.report.made.extend(tephra_model::allocation::control(c));
        self.report.finished = done.finished;
        for (key, _) in &done.groups {
            self.report.arrivals.push(format!("podgroup {key}"));
        }
        self.report.new_jobs.extend(done.groups);
        let plain = Self::controllers(c);
        self.report.new_jobs.extend(plain);
        if !self.options.hypernode_labels.is_empty() {
            let nodes: Vec<_> = c.nodes.iter().collect();
            let labels = &self.options.hypernode_labels;
            tephra_model::topology::refresh_discovered(&mut c.hypernodes, &mut self.discovered, &nodes, labels);
        }
        Some((self.time * 1000.0) as i64)
    }

    fn apply(
        &mut self,
        c: &mut Cluster,
        cycle: Option<Cycle<'_>>,
        notices: Vec<tephra_scheduler::scheduler::Notice>,
    ) -> CycleReport {
        if let Some(Cycle { outcome: out, shadows, .. }) = cycle {
            self.apply_decisions(c, out);
            let r = &mut self.report;
            r.queues = queue_rows(c, Some(out));
            r.capacity = capacity(c);
            r.quota_plugin = out.queue_status.as_ref().map(|s| s.0.clone());
            for (t, fe) in &out.fit_errors {
                let pod = &c.pods[out.extra.task_pod[*t as usize]];
                let pipelined = out.pipelined.iter().any(|(p, _)| p == t);
                if pod.node.is_none() && !pipelined {
                    r.pending.push((pod.key(), fe.summary()));
                }
            }
            let members = c.pods_by_group();
            for (j, reason) in &out.job_reasons {
                let g = &c.podgroups[out.extra.job_pg[*j as usize]];
                let no_pods = !members.contains_key(&(g.namespace.as_str(), g.name.as_str()));
                let reason = if no_pods && !g.job_templates.is_empty() && g.phase != Phase::Pending {
                    "admitted; its job controller creates the pods next cycle".to_string()
                } else {
                    reason.clone()
                };
                r.pending.push((out.names.jobs[*j as usize].clone(), reason));
            }
            r.pending.extend(c.dangling());
            r.pending.sort();
            r.faults = out.faults.iter().map(|f| format!("{} {}: {}", f.plugin, f.point, f.message)).collect();
            r.shadow = shadows.to_vec();
            r.targets = out.reservations.targets.clone();
            r.windows = out.windows.clone();
            r.starts = out
                .reservations
                .starts
                .iter()
                .map(|(j, ms)| (j.clone(), (*ms < i64::MAX).then(|| *ms as f64 / 1000.0)))
                .collect();
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
        }
        self.report.notices = notices.into_iter().map(|n| n.text).collect();
        let report = std::mem::take(&mut self.report);
        self.time += self.options.period;
        if self.options.skip_idle && !self.realtime && report.is_quiet() {
            if let Some(next) = self.next_event(c) {
                // The first cycle at or after it (after it, on the live
                // clock), on the period's grid.
                let period = self.options.period;
                let at = if self.options.live_clock {
                    ((next / period + 1e-9).floor() + 1.0) * period
                } else {
                    (next / period - 1e-9).ceil() * period
                };
                self.time = self.time.max(at);
            }
        }
        self.settled = self.settled_now(c, &report);
        report
    }

    fn wait(&mut self, _last: &CycleReport) -> bool {
        let more = self.cycle < self.options.max_cycles && !(self.stop_when_settled && self.settled);
        if more && self.realtime {
            std::thread::sleep(Duration::from_secs_f64(self.options.period));
        }
        more
    }
}

/// What the nodes can hold, in all.
fn capacity(c: &Cluster) -> tephra_model::resource::ResourceList {
    let mut sum = tephra_model::resource::ResourceList::new();
    for n in c.nodes.iter() {
        for (k, v) in &n.allocatable {
            *sum.entry(k.clone()).or_default() += v;
        }
    }
    sum
}

/// When a running pod started, in simulated seconds: pods the kubelet
/// started carry their start; pods running when they came count from then
/// (`started`, empty unless some did).
fn start_of(started: &HashMap<String, f64>, p: &Pod, now: f64) -> f64 {
    let known = if started.is_empty() { None } else { started.get(&p.key()).copied() };
    known.or(p.started.map(|ms| ms as f64 / 1000.0)).unwrap_or(now)
}

/// Per PodGroup (namespace, name): its time limit in seconds when its
/// queue ends overrunning jobs; `None` when nothing in the cluster sets a
/// limit (the common case costs one look at each object).
type Limits = HashMap<(String, String), f64>;

fn time_limits(c: &Cluster) -> Option<Limits> {
    use tephra_model::timelimit::{self, Overrun, DEFAULT_TIME_LIMIT, MAX_TIME_LIMIT, TIME_LIMIT};
    let queued = c
        .queues
        .iter()
        .any(|q| q.annotations.contains_key(DEFAULT_TIME_LIMIT) || q.annotations.contains_key(MAX_TIME_LIMIT));
    let any = queued
        || c.podgroups.iter().any(|g| g.annotations.contains_key(TIME_LIMIT))
        || c.pods.iter().any(|p| p.active_deadline_ms.is_some());
    if !any {
        return None;
    }
    // An unprotected job runs on; the scheduler evicts it where it was let
    // in ahead of a reservation.
    let evicted = timelimit::job_limits(c).into_iter().filter(|(_, (_, o))| *o == Overrun::Evict);
    Some(evicted.map(|(job, (ms, _))| (job, ms as f64 / 1000.0)).collect())
}

/// A running pod's limit in seconds and what sets it: its own
/// activeDeadlineSeconds or its job's time limit, whichever ends first.
fn pod_limit(limits: &Limits, p: &Pod) -> Option<(f64, String)> {
    let own = p.active_deadline_ms.map(|ms| (ms as f64 / 1000.0, "activeDeadlineSeconds".to_string()));
    let job = p.group.as_ref().and_then(|g| {
        let s = limits.get(&(p.namespace.clone(), g.clone()))?;
        Some((*s, format!("time limit of job {}/{g}", p.namespace)))
    });
    match (own, job) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}
