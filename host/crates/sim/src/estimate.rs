//! Start-time estimates, the `squeue --start` of Kubernetes: the simulator
//! run forward from a cluster's state with every pod running exactly as
//! long as its job's time limit (or its estimate) allows and nothing new
//! arriving. Pods with neither run on forever, so jobs waiting behind them
//! get no estimate. The answer is exact when every pod runs to its limit
//! and nothing arrives; jobs that end early change it, mostly to earlier.

use crate::simulate::{Options, Simulation};
use std::collections::{BTreeMap, HashMap};
use tephra_model::cluster::{Cluster, Phase, Pod, PodPhase};
use tephra_model::timelimit;
use tephra_readers::manifest::DURATION;
use tephra_scheduler::Scheduler;

/// A waiting job's predicted start.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// `namespace/name` of its PodGroup.
    pub job: String,
    /// Simulated seconds (on the clock given), or `None` past the horizon.
    pub start: Option<f64>,
}

/// Predicts when each waiting job of `cluster` starts, from `now` (seconds
/// on the cluster's clock) with `scheduler`, cycles `period` apart, looking
/// at most `horizon` cycles ahead.
pub fn estimate(cluster: &Cluster, scheduler: Scheduler, now: f64, period: f64, horizon: usize) -> Vec<Estimate> {
    let mut c = cluster.clone();
    let waiting = waiting_jobs(&c);
    if waiting.is_empty() {
        return Vec::new();
    }
    run_to_limits(&mut c, now);
    // Quiet stretches are skipped: the grid of cycles, and so the answer, is the same.
    let options = Options { max_cycles: horizon, period, skip_idle: true, ..Default::default() };
    let mut sim = Simulation::resume(c, scheduler, options, now);
    sim.driver.stop_when_settled = false;
    let mut start: BTreeMap<String, f64> = BTreeMap::new();
    let mut job_of: HashMap<String, String> = HashMap::new();
    while start.len() < waiting.len() && sim.cycle() < horizon {
        let r = sim.step();
        for (pod, _) in &r.binds {
            if job_of.is_empty() || !job_of.contains_key(pod) {
                job_of = sim.cluster.pods.iter().filter_map(|p| Some((p.key(), group_key(p)?))).collect();
            }
            if let Some(j) = job_of.get(pod).filter(|j| waiting.contains(*j)) {
                start.entry(j.clone()).or_insert(r.time);
            }
        }
        // Nothing ends any more (what runs has no limit): the rest never start.
        if sim.settled(&r) {
            break;
        }
    }
    waiting.into_iter().map(|job| Estimate { start: start.get(&job).copied(), job }).collect()
}

impl Simulation {
    /// [`estimate`] from where this simulation stands, with a scheduler of
    /// the same config, plugins and reservations.
    pub fn estimates(&self, horizon: usize) -> Vec<Estimate> {
        let mut s = Scheduler::new(self.scheduler.config.clone(), &self.scheduler.library);
        s.reservations = self.scheduler.reservations.clone();
        s.usage = self.scheduler.usage.clone();
        estimate(&self.cluster, s, self.driver.time, self.driver.period(), horizon)
    }
}

fn group_key(p: &Pod) -> Option<String> {
    Some(format!("{}/{}", p.namespace, p.group.as_ref()?))
}

/// Jobs not running yet: a PodGroup with pods (or pods to come) of which
/// none is placed, not completed.
pub fn waiting_jobs(c: &Cluster) -> Vec<String> {
    let members = c.pods_by_group();
    c.podgroups
        .iter()
        .filter(|g| !matches!(g.phase, Phase::Completed | Phase::Running))
        .filter(|g| match members.get(&(g.namespace.as_str(), g.name.as_str())) {
            Some(pods) => pods.iter().all(|&i| c.pods[i].node.is_none()),
            None => !g.job_templates.is_empty(),
        })
        .map(|g| g.key())
        .collect()
}

/// Gives every pod the run time its limits promise: the rest of its job's
/// limit (or activeDeadlineSeconds, or estimate) when running, the whole
/// when waiting; none when it has none of them.
fn run_to_limits(c: &mut Cluster, now: f64) {
    let limits = timelimit::job_limits(c);
    let bound = |p: &Pod| -> Option<i64> {
        let job = p.group.as_ref().and_then(|g| limits.get(&(p.namespace.clone(), g.clone()))).map(|l| l.0);
        timelimit::expected_run_ms(p, job)
    };
    for p in c.pods.iter_mut() {
        set_duration(p, bound(p));
        if p.phase == PodPhase::Running && p.started.is_none() {
            p.started = Some((now * 1000.0) as i64);
        }
    }
    for g in c.podgroups.iter_mut() {
        let mut templates = std::mem::take(&mut g.job_templates);
        for t in &mut templates {
            set_duration(t, bound(t));
        }
        g.job_templates = templates;
    }
}

fn set_duration(p: &mut Pod, ms: Option<i64>) {
    match ms {
        Some(ms) => p.annotations.insert(DURATION.into(), (ms as f64 / 1000.0).to_string()),
        None => p.annotations.remove(DURATION),
    };
}
