//! The policy lab's figures: what a run did to its jobs and queues, gathered
//! from the cycle reports as they come (a week of cycles is never kept).
//! [`Recorder::summary`] gives, per queue and overall, wait percentiles,
//! makespan, evictions by kind, utilisation and share against deserved over
//! time, and the longest-starved job.

use crate::report::CycleReport;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// At most this many points per time series in a summary.
const POINTS: usize = 400;

#[derive(Clone, Debug)]
struct Job {
    queue: String,
    arrived: f64,
    running: Option<f64>,
    finished: Option<f64>,
}

/// One cycle's use of the cluster: (time, fraction of each resource in
/// use) and each queue's share of what it deserves.
#[derive(Clone, Debug)]
struct Sample {
    time: f64,
    used: BTreeMap<String, f64>,
    shares: Vec<(String, f64)>,
}

/// Gathers a run's figures from its cycle reports.
#[derive(Default)]
pub struct Recorder {
    jobs: HashMap<String, Job>,
    order: Vec<String>,
    samples: Vec<Sample>,
    /// Per queue: evictions by the action that made them.
    evictions: BTreeMap<String, BTreeMap<String, u64>>,
    end: f64,
    cycles: usize,
}

/// Waiting figures of a set of jobs, in seconds from arrival to running.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Waits {
    /// Jobs that arrived.
    pub jobs: usize,
    /// Jobs that ran.
    pub started: usize,
    /// Jobs that completed.
    pub finished: usize,
    /// Jobs that never ran before the run ended.
    pub still_waiting: usize,
    /// The median wait.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The longest wait.
    pub max: f64,
    /// The mean wait.
    pub mean: f64,
    /// Evictions by the action that made them (preempt, reclaim, …).
    pub evictions: BTreeMap<String, u64>,
}

/// The job that waited longest (still waiting counts until the end).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Starved {
    /// `namespace/name`.
    pub job: String,
    /// Its queue.
    pub queue: String,
    /// Seconds it waited.
    pub waited: f64,
    /// It had not run when the run ended.
    pub still_waiting: bool,
}

/// A run's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// The variant's name.
    pub name: String,
    /// Cycles run.
    pub cycles: usize,
    /// Simulated seconds the run covered.
    pub simulated: f64,
    /// First arrival to last completion (or the end, when jobs remain).
    pub makespan: f64,
    /// Every job's waits.
    pub overall: Waits,
    /// Each queue's.
    pub queues: BTreeMap<String, Waits>,
    /// Per resource: (time, fraction of the cluster's capacity in use).
    pub utilisation: BTreeMap<String, Vec<(f64, f64)>>,
    /// Per resource: time-weighted mean of the fraction in use.
    pub mean_utilisation: BTreeMap<String, f64>,
    /// Per queue: (time, allocated / deserved on its most-used resource).
    pub share: BTreeMap<String, Vec<(f64, f64)>>,
    /// The job that waited longest.
    pub longest_starved: Option<Starved>,
}

impl Recorder {
    /// Takes in one cycle's report.
    pub fn observe(&mut self, r: &CycleReport) {
        self.cycles += 1;
        self.end = r.time;
        for (key, queue) in &r.new_jobs {
            if let std::collections::hash_map::Entry::Vacant(e) = self.jobs.entry(key.clone()) {
                e.insert(Job { queue: queue.clone(), arrived: r.time, running: None, finished: None });
                self.order.push(key.clone());
            }
        }
        for (key, phase) in &r.phases {
            let Some(j) = self.jobs.get_mut(key) else { continue };
            match phase.as_str() {
                "Running" => {
                    j.running.get_or_insert(r.time);
                }
                "Completed" => {
                    j.running.get_or_insert(r.time);
                    j.finished.get_or_insert(r.time);
                }
                _ => {}
            }
        }
        for ((_, _, reason), queue) in r.evictions.iter().zip(&r.eviction_queues) {
            let kind = reason.split(':').next().unwrap_or("evict").to_string();
            *self.evictions.entry(queue.clone()).or_default().entry(kind).or_default() += 1;
        }
        if r.queues.is_empty() {
            return;
        }
        let mut used: BTreeMap<String, f64> = BTreeMap::new();
        for q in &r.queues {
            for (k, v) in &q.allocated {
                *used.entry(k.clone()).or_default() += v;
            }
        }
        let used = r
            .capacity
            .iter()
            .filter(|(k, v)| **v > 0.0 && k.as_str() != "pods" && !k.starts_with("hugepages"))
            .filter(|(k, _)| matches!(k.as_str(), "cpu" | "memory") || used.contains_key(*k))
            .map(|(k, cap)| (k.clone(), used.get(k).copied().unwrap_or(0.0) / cap))
            .collect();
        let shares = r
            .queues
            .iter()
            .filter_map(|q| {
                let d = q.deserved.as_ref()?;
                let s = d
                    .iter()
                    .filter(|(k, v)| **v > 0.0 && k.as_str() != "pods")
                    .map(|(k, v)| q.allocated.get(k).copied().unwrap_or(0.0) / v)
                    .fold(0.0, f64::max);
                Some((q.name.clone(), s))
            })
            .collect();
        self.samples.push(Sample { time: r.time, used, shares });
    }

    /// The figures so far, under `name`.
    pub fn summary(&self, name: &str) -> Summary {
        let end = self.end;
        let mut all = Vec::new();
        let mut by_queue: BTreeMap<&str, Vec<&Job>> = BTreeMap::new();
        for key in &self.order {
            let j = &self.jobs[key];
            all.push(j);
            by_queue.entry(j.queue.as_str()).or_default().push(j);
        }
        let mut overall = waits(&all, end);
        for counts in self.evictions.values() {
            for (k, v) in counts {
                *overall.evictions.entry(k.clone()).or_default() += v;
            }
        }
        let queues = by_queue
            .into_iter()
            .map(|(q, jobs)| {
                let mut w = waits(&jobs, end);
                w.evictions = self.evictions.get(q).cloned().unwrap_or_default();
                (q.to_string(), w)
            })
            .collect();
        let first = all.iter().map(|j| j.arrived).reduce(f64::min).unwrap_or(0.0);
        let last = if all.iter().all(|j| j.finished.is_some()) {
            all.iter().filter_map(|j| j.finished).reduce(f64::max).unwrap_or(first)
        } else {
            end
        };
        let longest_starved = self
            .order
            .iter()
            .map(|k| (k, &self.jobs[k]))
            .map(|(k, j)| (k, j, j.running.unwrap_or(end) - j.arrived))
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(k, j, waited)| Starved {
                job: k.clone(),
                queue: j.queue.clone(),
                waited,
                still_waiting: j.running.is_none(),
            });
        let mut utilisation: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        let mut share: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for s in &self.samples {
            for (k, v) in &s.used {
                utilisation.entry(k.clone()).or_default().push((s.time, *v));
            }
            for (q, v) in &s.shares {
                share.entry(q.clone()).or_default().push((s.time, *v));
            }
        }
        let mean_utilisation = utilisation.iter().map(|(k, pts)| (k.clone(), time_mean(pts, end))).collect();
        Summary {
            name: name.to_string(),
            cycles: self.cycles,
            simulated: end,
            makespan: last - first,
            overall,
            queues,
            utilisation: utilisation.into_iter().map(|(k, v)| (k, thin(&v))).collect(),
            mean_utilisation,
            // A queue that never held anything (the hierarchy's root, say) has no line.
            share: share.into_iter().filter(|(_, v)| v.iter().any(|p| p.1 > 0.0)).map(|(k, v)| (k, thin(&v))).collect(),
            longest_starved,
        }
    }
}

fn waits(jobs: &[&Job], end: f64) -> Waits {
    let mut w: Vec<f64> = jobs.iter().filter_map(|j| Some(j.running? - j.arrived)).collect();
    w.sort_by(f64::total_cmp);
    let pct = |p: f64| if w.is_empty() { 0.0 } else { w[((p * w.len() as f64).ceil() as usize).clamp(1, w.len()) - 1] };
    let waiting: Vec<f64> = jobs.iter().filter(|j| j.running.is_none()).map(|j| end - j.arrived).collect();
    Waits {
        jobs: jobs.len(),
        started: w.len(),
        finished: jobs.iter().filter(|j| j.finished.is_some()).count(),
        still_waiting: waiting.len(),
        p50: pct(0.5),
        p90: pct(0.9),
        p99: pct(0.99),
        max: w.iter().chain(&waiting).copied().fold(0.0, f64::max),
        mean: if w.is_empty() { 0.0 } else { w.iter().sum::<f64>() / w.len() as f64 },
        evictions: BTreeMap::new(),
    }
}

/// The mean of a step function sampled at `pts`, each value holding until
/// the next sample (the last until `end`).
fn time_mean(pts: &[(f64, f64)], end: f64) -> f64 {
    let (Some(first), Some(last)) = (pts.first(), pts.last()) else { return 0.0 };
    let span = end.max(last.0) - first.0;
    if span <= 0.0 {
        return last.1;
    }
    let mut sum = 0.0;
    for w in pts.windows(2) {
        sum += w[0].1 * (w[1].0 - w[0].0);
    }
    sum += last.1 * (end.max(last.0) - last.0);
    sum / span
}

/// At most [`POINTS`] points: each bucket of time keeps its highest value,
/// so a short peak still shows.
fn thin(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if pts.len() <= POINTS {
        return pts.to_vec();
    }
    let (t0, t1) = (pts[0].0, pts[pts.len() - 1].0);
    let width = (t1 - t0) / POINTS as f64;
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(POINTS + 1);
    let mut bucket = usize::MAX;
    for &(t, v) in pts {
        let b = (((t - t0) / width) as usize).min(POINTS - 1);
        if b != bucket {
            out.push((t, v));
            bucket = b;
        } else if let Some(last) = out.last_mut() {
            last.1 = last.1.max(v);
        }
    }
    out
}

/// Seconds as a short human figure ("95s", "12m", "3.5h", "2.1d").
pub fn seconds(s: f64) -> String {
    match s {
        s if s < 120.0 => format!("{s:.0}s"),
        s if s < 7200.0 => format!("{:.0}m", s / 60.0),
        s if s < 172_800.0 => format!("{:.1}h", s / 3600.0),
        s => format!("{:.1}d", s / 86400.0),
    }
}

impl Waits {
    /// Jobs, still waiting, and the wait p50, p90, p99 and max, as shown.
    pub fn cells(&self) -> [String; 6] {
        let t = seconds;
        [self.jobs.to_string(), self.still_waiting.to_string(), t(self.p50), t(self.p90), t(self.p99), t(self.max)]
    }

    /// "preempt 2, reclaim 5", or "0".
    pub fn evictions_text(&self) -> String {
        if self.evictions.is_empty() {
            return "0".into();
        }
        self.evictions.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
    }
}

impl Summary {
    /// "cpu 82%, memory 41%".
    pub fn usage_text(&self) -> String {
        self.mean_utilisation.iter().map(|(k, v)| format!("{k} {:.0}%", v * 100.0)).collect::<Vec<_>>().join(", ")
    }

    /// A few lines for a terminal.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{}: {} cycles over {}, makespan {}, mean use {}\n",
            self.name,
            self.cycles,
            seconds(self.simulated),
            seconds(self.makespan),
            self.usage_text()
        );
        let row = |name: &str, w: &Waits| {
            let [jobs, waiting, p50, p90, p99, max] = w.cells();
            format!(
                "  {name:<16} jobs {jobs:>6}  waiting {waiting:>5}  wait p50 {p50:>6} p90 {p90:>6} p99 {p99:>6} \
                 max {max:>6}  evictions {}\n",
                w.evictions_text()
            )
        };
        for (q, w) in &self.queues {
            s += &row(q, w);
        }
        s += &row("(all)", &self.overall);
        if let Some(j) = &self.longest_starved {
            let how = if j.still_waiting { "still waiting after" } else { "waited" };
            s += &format!("  longest starved: {} (queue {}) {how} {}\n", j.job, j.queue, seconds(j.waited));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_percentiles_and_step_means() {
        let job = |arrived, running: Option<f64>| Job { queue: "q".into(), arrived, running, finished: None };
        let jobs = [job(0.0, Some(10.0)), job(0.0, Some(20.0)), job(5.0, None), job(0.0, Some(0.0))];
        let refs: Vec<&Job> = jobs.iter().collect();
        let w = waits(&refs, 100.0);
        assert_eq!((w.jobs, w.started, w.still_waiting), (4, 3, 1));
        assert_eq!((w.p50, w.p90, w.max), (10.0, 20.0, 95.0));
        assert_eq!(time_mean(&[(0.0, 1.0), (10.0, 0.0)], 20.0), 0.5);
        let many: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64, if i == 5_000 { 1.0 } else { 0.0 })).collect();
        let thin = thin(&many);
        assert!(thin.len() <= POINTS + 1 && thin.iter().any(|p| p.1 == 1.0));
    }
}
