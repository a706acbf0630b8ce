//! Fidelity: the lab's forecast checked against a cluster. The same trace,
//! nodes, queues and config run in the simulator and, replayed on a live
//! cluster (`tephra_kube::replay`), under `tephra run`; per job the start,
//! end and node count are compared, per queue the mean share of the cluster
//! over time, overall the makespan and utilisation.

use crate::lab::replay::Observed;
use crate::manifest::{Object, Timed};
use crate::resource::ResourceList;
use crate::scheduler::{Library, Scheduler};
use crate::simulate::{Options, Simulation};
use anyhow::{anyhow, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One job's run on one side, in trace seconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobRun {
    /// Its queue.
    pub queue: String,
    /// When it arrived.
    pub arrived: f64,
    /// Its first pod started.
    pub start: Option<f64>,
    /// Its last pod ended (none while one has not).
    pub end: Option<f64>,
    /// Distinct nodes its pods ran on.
    pub nodes: usize,
}

/// A pod holding resources from `start` to `end`.
#[derive(Clone, Debug)]
struct Interval {
    queue: String,
    start: f64,
    end: f64,
    requests: ResourceList,
}

/// What one side did.
#[derive(Clone, Debug, Default)]
pub struct Side {
    /// Each job's run, by name.
    pub jobs: BTreeMap<String, JobRun>,
    intervals: Vec<Interval>,
    capacity: ResourceList,
}

/// The per-job difference (observed − simulated).
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The job.
    pub job: String,
    /// Its run in the simulator.
    pub simulated: JobRun,
    /// Its run on the cluster.
    pub observed: JobRun,
    /// Observed start − simulated start.
    pub start_delta: Option<f64>,
    /// Observed end − simulated end.
    pub end_delta: Option<f64>,
}

impl Row {
    /// The row as the table shows it, text or HTML: job, predicted and
    /// observed start and their difference, the same of the end, and the
    /// node counts (`predicted/observed`); seconds, `-` where none.
    pub fn cells(&self) -> [String; 8] {
        let t = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}"));
        [
            self.job.clone(),
            t(self.simulated.start),
            t(self.observed.start),
            t(self.start_delta),
            t(self.simulated.end),
            t(self.observed.end),
            t(self.end_delta),
            format!("{}/{}", self.simulated.nodes, self.observed.nodes),
        ]
    }
}

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Fidelity {
    /// The scheduling period, trace seconds.
    pub period: f64,
    /// Per job, both runs.
    pub rows: Vec<Row>,
    /// Jobs that started on both sides.
    pub jobs_compared: usize,
    /// |Δ start| over the jobs that started on both sides.
    pub start_median: f64,
    /// Its 95th percentile.
    pub start_p95: f64,
    /// |Δ end| over the jobs that ended on both sides.
    pub end_median: f64,
    /// Its 95th percentile.
    pub end_p95: f64,
    /// Jobs whose node count differs.
    pub node_count_differs: usize,
    /// First arrival to last end: (simulated, observed).
    pub makespan: (f64, f64),
    /// Per resource: time-weighted mean fraction in use (simulated, observed).
    pub utilisation: BTreeMap<String, (f64, f64)>,
    /// Per queue: time-weighted mean of its dominant share of the cluster.
    pub shares: BTreeMap<String, (f64, f64)>,
}

/// The workload's trace jobs' pods, by `namespace/pod`, to their job and queue.
fn pod_jobs(objects: &[Timed]) -> BTreeMap<String, (String, String, ResourceList)> {
    let mut out = BTreeMap::new();
    for t in objects {
        if let Object::PodGroup(g) = &t.object {
            for p in &g.job_templates {
                out.insert(p.key(), (g.key(), g.queue.clone(), p.requests.clone()));
            }
        }
    }
    out
}

/// The cluster's capacity: every node's allocatable.
fn capacity(objects: &[Timed]) -> ResourceList {
    let mut c = ResourceList::new();
    for t in objects {
        if let Object::Node(n) = &t.object {
            for (k, v) in &n.allocatable {
                *c.entry(k.clone()).or_default() += v;
            }
        }
    }
    c
}

/// Runs the workload in the simulator and records each job's run, and the
/// lab's figures of the run (named `simulated`).
pub fn simulated(
    objects: &[Timed],
    config: &crate::config::SchedulerConfig,
    plugins_dir: Option<&Path>,
    period: f64,
) -> Result<(Side, tephra_sim::lab::Summary)> {
    let library = Library::load_with(plugins_dir, crate::wasm::Sandbox::configured(&config.limits))?;
    let scheduler = Scheduler::new(config.clone(), &library);
    if let Some(p) = scheduler.missing_plugins.first() {
        return Err(anyhow!("plugin {p:?} is configured but not available"));
    }
    let pods = pod_jobs(objects);
    // kwok's kubelets start a bound pod at once: so does the simulated one
    // here; and tephra run's cycles tick on their own clock.
    let options = Options {
        max_cycles: usize::MAX,
        period,
        skip_idle: true,
        start_on_bind: true,
        live_clock: true,
        ..Default::default()
    };
    let mut sim = Simulation::new(objects.to_vec(), scheduler, options);
    let mut side = Side { capacity: capacity(objects), ..Default::default() };
    let mut node_of: BTreeMap<String, String> = BTreeMap::new();
    let mut open: BTreeMap<String, f64> = BTreeMap::new();
    let mut nodes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut recorder = tephra_sim::lab::Recorder::default();
    let mut observe = |r: &crate::report::CycleReport| {
        recorder.observe(r);
        for (job, queue) in &r.new_jobs {
            side.jobs.entry(job.clone()).or_insert_with(|| JobRun {
                queue: queue.clone(),
                arrived: r.time,
                ..Default::default()
            });
        }
        for (pod, node) in &r.binds {
            node_of.insert(pod.clone(), node.clone());
        }
        for pod in &r.started {
            let Some((job, _, _)) = pods.get(pod) else { continue };
            open.insert(pod.clone(), r.time);
            if let Some(j) = side.jobs.get_mut(job) {
                j.start.get_or_insert(r.time);
            }
            if let Some(n) = node_of.get(pod) {
                nodes.entry(job.clone()).or_default().insert(n.clone());
            }
        }
        let ended =
            r.completed.iter().map(|p| (p.clone(), true)).chain(r.evictions.iter().map(|e| (e.0.clone(), false)));
        for (pod, finished) in ended {
            let (Some((job, queue, req)), Some(start)) = (pods.get(&pod), open.remove(&pod)) else { continue };
            side.intervals.push(Interval { queue: queue.clone(), start, end: r.time, requests: req.clone() });
            if finished {
                if let Some(j) = side.jobs.get_mut(job) {
                    j.end = Some(j.end.map_or(r.time, |e: f64| e.max(r.time)));
                }
            }
        }
    };
    sim.0.run(|r| observe(r));
    for (job, n) in nodes {
        if let Some(j) = side.jobs.get_mut(&job) {
            j.nodes = n.len();
        }
    }
    Ok((side, recorder.summary("simulated")))
}

/// What the replay saw on the cluster, as a [`Side`] (pods' requests from
/// the workload).
pub fn observed(objects: &[Timed], seen: &[Observed], namespaces: &BTreeMap<String, String>) -> Side {
    let pods = pod_jobs(objects);
    let mut side = Side { capacity: capacity(objects), ..Default::default() };
    for o in seen {
        let ns = namespaces.get(&o.job).map_or("default", String::as_str);
        let key = format!("{ns}/{}", o.job);
        let finished: BTreeSet<u32> = o.runs.iter().filter(|r| !r.evicted && r.end.is_some()).map(|r| r.task).collect();
        let tasks = pods.values().filter(|(j, _, _)| *j == key).count();
        let all_done = tasks > 0 && finished.len() == tasks;
        side.jobs.insert(
            key.clone(),
            JobRun {
                queue: o.queue.clone(),
                arrived: o.arrived,
                start: o.runs.iter().map(|r| r.start).min_by(f64::total_cmp),
                end: all_done.then(|| o.runs.iter().filter_map(|r| r.end).fold(0.0, f64::max)),
                nodes: o.runs.iter().map(|r| r.node.as_str()).collect::<BTreeSet<_>>().len(),
            },
        );
        for r in &o.runs {
            // A task's pod made again after an eviction has a name of its
            // own; its requests are the task's.
            let req = pods.get(&format!("{ns}/{}-{}", o.job, r.task)).map(|p| p.2.clone()).unwrap_or_default();
            let end = r.end.unwrap_or(r.start);
            side.intervals.push(Interval { queue: o.queue.clone(), start: r.start, end, requests: req });
        }
    }
    side
}

/// The `q`-quantile of `v` (nearest rank; 0 when empty).
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

impl Side {
    /// First arrival to last end.
    fn makespan(&self) -> f64 {
        let first = self.jobs.values().map(|j| j.arrived).fold(f64::INFINITY, f64::min);
        let last = self.jobs.values().filter_map(|j| j.end).fold(0.0, f64::max);
        if first.is_finite() {
            (last - first).max(0.0)
        } else {
            0.0
        }
    }

    /// Time-weighted means over [first arrival, last end]: each resource's
    /// fraction in use, and each queue's dominant share of the cluster.
    fn means(&self) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
        let first = self.jobs.values().map(|j| j.arrived).fold(f64::INFINITY, f64::min);
        let span = self.makespan();
        let (mut used, mut shares) = (BTreeMap::new(), BTreeMap::new());
        if span <= 0.0 {
            return (used, shares);
        }
        // Resource-seconds per resource, and per queue per resource.
        let mut per_queue: BTreeMap<&str, BTreeMap<&str, f64>> = BTreeMap::new();
        for iv in &self.intervals {
            let secs = (iv.end.min(first + span) - iv.start.max(first)).max(0.0);
            for (k, v) in &iv.requests {
                *used.entry(k.clone()).or_insert(0.0) += v * secs;
                *per_queue.entry(iv.queue.as_str()).or_default().entry(k.as_str()).or_insert(0.0) += v * secs;
            }
        }
        for (k, v) in used.iter_mut() {
            *v /= self.capacity.get(k).copied().unwrap_or(f64::INFINITY) * span;
        }
        for (q, by) in per_queue {
            let dominant = by
                .iter()
                .map(|(k, v)| v / (self.capacity.get(*k).copied().unwrap_or(f64::INFINITY) * span))
                .fold(0.0, f64::max);
            shares.insert(q.to_string(), dominant);
        }
        used.retain(|k, _| k != "pods");
        (used, shares)
    }
}

/// Compares the two sides.
pub fn compare(sim: &Side, obs: &Side, period: f64) -> Fidelity {
    let mut rows = Vec::new();
    for (job, s) in &sim.jobs {
        let o = obs.jobs.get(job).cloned().unwrap_or_default();
        let delta = |a: Option<f64>, b: Option<f64>| Some(b? - a?);
        rows.push(Row {
            job: job.clone(),
            start_delta: delta(s.start, o.start),
            end_delta: delta(s.end, o.end),
            simulated: s.clone(),
            observed: o,
        });
    }
    let starts: Vec<f64> = rows.iter().filter_map(|r| r.start_delta.map(f64::abs)).collect();
    let ends: Vec<f64> = rows.iter().filter_map(|r| r.end_delta.map(f64::abs)).collect();
    let (su, ss) = sim.means();
    let (ou, os) = obs.means();
    let pair = |a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>| -> BTreeMap<String, (f64, f64)> {
        a.keys()
            .chain(b.keys())
            .map(|k| (k.clone(), (a.get(k).copied().unwrap_or(0.0), b.get(k).copied().unwrap_or(0.0))))
            .collect()
    };
    Fidelity {
        period,
        jobs_compared: starts.len(),
        start_median: quantile(starts.clone(), 0.5),
        start_p95: quantile(starts, 0.95),
        end_median: quantile(ends.clone(), 0.5),
        end_p95: quantile(ends, 0.95),
        node_count_differs: rows.iter().filter(|r| r.simulated.nodes != r.observed.nodes).count(),
        makespan: (sim.makespan(), obs.makespan()),
        utilisation: pair(&su, &ou),
        shares: pair(&ss, &os),
        rows,
    }
}

impl Fidelity {
    /// Makespan difference, relative to the simulated one.
    pub fn makespan_error(&self) -> f64 {
        let (s, o) = self.makespan;
        if s > 0.0 {
            (o - s).abs() / s
        } else {
            0.0
        }
    }

    /// The goals: median |Δ start| ≤ 1 period, p95 ≤ 3 periods, makespan within 2 %.
    pub fn goals_met(&self) -> bool {
        self.start_median <= self.period + 1e-9
            && self.start_p95 <= 3.0 * self.period + 1e-9
            && self.makespan_error() <= 0.02
    }

    /// The table and the figures, as text.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{:<24} {:>9} {:>9} {:>8}  {:>9} {:>9} {:>8}  {:>5}\n",
            "job", "sim start", "obs start", "Δ", "sim end", "obs end", "Δ", "nodes"
        );
        for r in &self.rows {
            let [job, ss, os, sd, se, oe, ed, nodes] = r.cells();
            s += &format!("{job:<24} {ss:>9} {os:>9} {sd:>8}  {se:>9} {oe:>9} {ed:>8}  {nodes:>5}\n");
        }
        let p = self.period;
        s += &format!(
            "\n{} jobs compared (period {p} s): |Δ start| median {:.1} s ({:.2} periods), p95 {:.1} s ({:.2} periods); \
             |Δ end| median {:.1} s, p95 {:.1} s; node counts differ for {} jobs\n",
            self.jobs_compared,
            self.start_median,
            self.start_median / p,
            self.start_p95,
            self.start_p95 / p,
            self.end_median,
            self.end_p95,
            self.node_count_differs
        );
        s += &format!(
            "makespan: simulated {:.0} s, observed {:.0} s ({:+.2} %)\n",
            self.makespan.0,
            self.makespan.1,
            100.0 * (self.makespan.1 - self.makespan.0) / self.makespan.0.max(1e-9)
        );
        for (k, (a, b)) in &self.utilisation {
            s += &format!("utilisation {k}: simulated {:.1} %, observed {:.1} %\n", 100.0 * a, 100.0 * b);
        }
        for (q, (a, b)) in &self.shares {
            s += &format!("queue {q}: mean share simulated {:.1} %, observed {:.1} %\n", 100.0 * a, 100.0 * b);
        }
        s += &format!(
            "goals (median ≤ 1 period, p95 ≤ 3 periods, makespan within 2 %): {}\n",
            if self.goals_met() { "met" } else { "NOT met" }
        );
        s
    }
}
