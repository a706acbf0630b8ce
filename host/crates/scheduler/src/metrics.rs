//! Volcano's scheduler metrics, under Volcano's names, labels, units and
//! buckets, so its Grafana dashboards and alerts work unchanged against
//! tephra. Recorded where they happen (a cycle, an action, a bind, a
//! publish); an admin surface encodes [`Metrics::registry`].
//!
//! Latencies are milliseconds; `*_milli_cpu` millicores, `*_memory_bytes`
//! bytes, `*_scalar_resources` milli-units (a GPU is 1000), as Volcano.

use crate::queues::QueueRow;
use prometheus::{Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, Opts, Registry};
use std::collections::BTreeSet;
use tephra_model::cluster::Cluster;
use tephra_model::tracked::Mark;
use tephra_session::session::{Decision, Outcome};

/// Volcano's `ExponentialBucketsRange(min, max, n)`: n bounds from min to
/// max, each the previous times a constant factor.
fn buckets(min: f64, max: f64, n: usize) -> Vec<f64> {
    let factor = (max / min).powf(1.0 / (n - 1) as f64);
    (0..n).map(|i| min * factor.powi(i as i32)).collect()
}

/// The metrics, registered in their own registry (cheap to clone: shared).
#[derive(Clone)]
pub struct Metrics {
    /// The registry the admin surface exports.
    pub registry: Registry,
    e2e: Histogram,
    open_session: Histogram,
    action: HistogramVec,
    plugin: HistogramVec,
    job_latency: Histogram,
    job_duration: GaugeVec,
    unschedule_task: GaugeVec,
    unschedule_job: Gauge,
    preemption_attempts: IntCounter,
    preemption_victims: Gauge,
    queue: QueueGauges,
    /// Label sets last written, to delete those of objects that are gone.
    jobs_seen: BTreeSet<(String, String, String)>,
    unschedulable_seen: BTreeSet<String>,
    queues_seen: BTreeSet<String>,
    scalars_seen: BTreeSet<(usize, String, String)>,
    /// The PodGroups as last swept for gone jobs.
    podgroups_read: Option<Mark>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// Per figure ("allocated", "request", "deserved", "capacity"): its cpu,
/// memory and scalar-resource gauges; then share and weight.
#[derive(Clone)]
struct QueueGauges {
    figures: Vec<(&'static str, GaugeVec, GaugeVec, GaugeVec)>,
    share: GaugeVec,
    weight: GaugeVec,
}

fn histogram(r: &Registry, name: &str, help: &str, b: Vec<f64>) -> Histogram {
    let h = Histogram::with_opts(HistogramOpts::new(name, help).buckets(b)).expect("valid histogram");
    r.register(Box::new(h.clone())).expect("unique metric name");
    h
}

fn histogram_vec(r: &Registry, name: &str, help: &str, labels: &[&str], b: Vec<f64>) -> HistogramVec {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(b), labels).expect("valid histogram");
    r.register(Box::new(h.clone())).expect("unique metric name");
    h
}

fn gauge_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> GaugeVec {
    let g = GaugeVec::new(Opts::new(name, help), labels).expect("valid gauge");
    r.register(Box::new(g.clone())).expect("unique metric name");
    g
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Volcano's scheduler metrics, registered and at zero.
    pub fn new() -> Self {
        let r = Registry::new();
        let unschedule_job =
            Gauge::new("volcano_unschedule_job_count", "Jobs that could not be scheduled.").expect("valid gauge");
        r.register(Box::new(unschedule_job.clone())).expect("unique metric name");
        let preemption_attempts =
            IntCounter::new("volcano_total_preemption_attempts", "Preemption attempts (preemptors that evicted).")
                .expect("valid counter");
        r.register(Box::new(preemption_attempts.clone())).expect("unique metric name");
        let preemption_victims =
            Gauge::new("volcano_pod_preemption_victims", "Pods evicted by the latest cycle.").expect("valid gauge");
        r.register(Box::new(preemption_victims.clone())).expect("unique metric name");
        let figures = ["allocated", "request", "deserved", "capacity"]
            .into_iter()
            .map(|what| {
                let name = |unit: &str| format!("volcano_queue_{what}_{unit}");
                let help = format!("The queue's {what} resources.");
                (
                    what,
                    gauge_vec(&r, &name("milli_cpu"), &help, &["queue_name"]),
                    gauge_vec(&r, &name("memory_bytes"), &help, &["queue_name"]),
                    gauge_vec(&r, &name("scalar_resources"), &help, &["queue_name", "resource"]),
                )
            })
            .collect();
        let queue = QueueGauges {
            figures,
            share: gauge_vec(&r, "volcano_queue_share", "Queue share (allocated / deserved).", &["queue_name"]),
            weight: gauge_vec(&r, "volcano_queue_weight", "Queue weight.", &["queue_name"]),
        };
        Metrics {
            e2e: histogram(
                &r,
                "volcano_e2e_scheduling_latency_milliseconds",
                "E2e scheduling latency in milliseconds (a whole cycle).",
                buckets(1.0, 5000.0, 20),
            ),
            open_session: histogram(
                &r,
                "volcano_open_session_duration_milliseconds",
                "Time to open a session, in milliseconds.",
                buckets(1.0, 5000.0, 20),
            ),
            action: histogram_vec(
                &r,
                "volcano_action_scheduling_latency_milliseconds",
                "Action scheduling latency in milliseconds.",
                &["action"],
                buckets(1.0, 2000.0, 20),
            ),
            plugin: histogram_vec(
                &r,
                "volcano_plugin_scheduling_latency_milliseconds",
                "Plugin scheduling latency in milliseconds (time in the plugin's calls per session).",
                &["plugin", "OnSession"],
                buckets(0.1, 100.0, 15),
            ),
            job_latency: histogram(
                &r,
                "volcano_e2e_job_scheduling_latency_milliseconds",
                "From a job's creation to the placement of its tasks, in milliseconds.",
                buckets(100.0, 120000.0, 30),
            ),
            job_duration: gauge_vec(
                &r,
                "volcano_e2e_job_scheduling_duration",
                "From a job's creation to its latest placement, in milliseconds.",
                &["job_name", "queue", "job_namespace"],
            ),
            unschedule_task: gauge_vec(
                &r,
                "volcano_unschedule_task_count",
                "Tasks of a job still missing for its gang.",
                &["job_id"],
            ),
            unschedule_job,
            preemption_attempts,
            preemption_victims,
            queue,
            jobs_seen: BTreeSet::new(),
            unschedulable_seen: BTreeSet::new(),
            queues_seen: BTreeSet::new(),
            scalars_seen: BTreeSet::new(),
            podgroups_read: None,
            registry: r,
        }
    }

    /// A cycle: its whole time, its session's opening, each action's time
    /// and each plugin's time in calls (ms).
    pub fn cycle(&self, total_ms: f64, open_ms: f64, actions: &[(String, f64)], plugins: &[(String, f64)]) {
        self.e2e.observe(total_ms);
        self.open_session.observe(open_ms);
        for (a, ms) in actions {
            self.action.with_label_values(&[a.as_str()]).observe(*ms);
        }
        for (p, ms) in plugins {
            self.plugin.with_label_values(&[p.as_str(), "OnSessionOpen"]).observe(*ms);
        }
    }

    /// What a cycle decided: per bind, the job's time since creation; per
    /// job still short of its gang, how many tasks; evictions.
    pub fn outcome(&mut self, cluster: &Cluster, out: &Outcome, now_ms: i64) {
        let mut victims = 0;
        let mut preemptors = BTreeSet::new();
        let mut placed = BTreeSet::new();
        for d in &out.decisions {
            match d {
                Decision::Bind { task, .. } => {
                    placed.insert(out.task_job[*task as usize]);
                }
                Decision::Evict { reason, .. } => {
                    victims += 1;
                    preemptors.insert(reason.as_str());
                }
                Decision::Nominate { .. } => {}
            }
        }
        self.preemption_victims.set(victims as f64);
        self.preemption_attempts.inc_by(preemptors.len() as u64);
        for j in placed {
            let Some(g) = out.extra.job_pg.get(j as usize).and_then(|&i| cluster.podgroups.get(i)) else { continue };
            let ms = (now_ms - g.created).max(0) as f64;
            self.job_latency.observe(ms);
            let labels = (g.name.clone(), g.queue.clone(), g.namespace.clone());
            self.job_duration.with_label_values(&[&labels.0, &labels.1, &labels.2]).set(ms);
            self.jobs_seen.insert(labels);
        }
        // Gone jobs leave the gauge, as Volcano deletes them: looked for
        // only when PodGroups went or came, not on every cycle.
        let moved = self.podgroups_read.is_none_or(|m| cluster.podgroups.changed_whole_since(m));
        self.podgroups_read = Some(cluster.podgroups.mark());
        if moved && !self.jobs_seen.is_empty() {
            let live: std::collections::HashSet<(&str, &str)> =
                cluster.podgroups.iter().map(|g| (g.namespace.as_str(), g.name.as_str())).collect();
            let gone: Vec<_> = self
                .jobs_seen
                .iter()
                .filter(|(n, _, ns)| !live.contains(&(ns.as_str(), n.as_str())))
                .cloned()
                .collect();
            for l in gone {
                let _ = self.job_duration.remove_label_values(&[&l.0, &l.1, &l.2]);
                self.jobs_seen.remove(&l);
            }
        }
        let mut now = BTreeSet::new();
        for (j, c) in out.conditions.iter().enumerate() {
            let Some(c) = c.as_ref().filter(|c| c.kind == "Unschedulable") else { continue };
            let Some(g) = out.extra.job_pg.get(j).and_then(|&i| cluster.podgroups.get(i)) else { continue };
            let missing = missing_tasks(&c.message);
            // Volcano's job_id label holds the job's name.
            self.unschedule_task.with_label_values(&[g.name.as_str()]).set(missing);
            now.insert(g.name.clone());
        }
        for old in self.unschedulable_seen.difference(&now) {
            let _ = self.unschedule_task.remove_label_values(&[old.as_str()]);
        }
        self.unschedule_job.set(now.len() as f64);
        self.unschedulable_seen = now;
    }

    /// The queues' figures after a cycle; a queue gone leaves every gauge.
    pub fn queues(&mut self, rows: &[QueueRow]) {
        let g = &self.queue;
        let mut now = BTreeSet::new();
        let mut scalars = BTreeSet::new();
        for q in rows {
            let name = q.name.as_str();
            let lists = [Some(&q.allocated), Some(&q.request), q.deserved.as_ref(), Some(&q.capability)];
            for (i, ((_, cpu, memory, scalar), list)) in g.figures.iter().zip(lists).enumerate() {
                let Some(list) = list else { continue };
                cpu.with_label_values(&[name]).set(list.get("cpu").copied().unwrap_or(0.0));
                memory.with_label_values(&[name]).set(list.get("memory").copied().unwrap_or(0.0));
                for (r, v) in list.iter().filter(|(r, _)| !matches!(r.as_str(), "cpu" | "memory" | "pods")) {
                    scalar.with_label_values(&[name, r.as_str()]).set(*v);
                    scalars.insert((i, q.name.clone(), r.clone()));
                }
            }
            if let Some(s) = q.share {
                g.share.with_label_values(&[name]).set(s);
            }
            g.weight.with_label_values(&[name]).set(q.weight);
            now.insert(q.name.clone());
        }
        for gone in self.queues_seen.difference(&now) {
            for (_, cpu, memory, _) in &g.figures {
                let _ = cpu.remove_label_values(&[gone.as_str()]);
                let _ = memory.remove_label_values(&[gone.as_str()]);
            }
            let _ = g.share.remove_label_values(&[gone.as_str()]);
            let _ = g.weight.remove_label_values(&[gone.as_str()]);
        }
        // A queue gone leaves; a resource it no longer names reads 0, as Volcano.
        for (i, queue, r) in self.scalars_seen.difference(&scalars) {
            let scalar = &g.figures[*i].3;
            if now.contains(queue) {
                scalar.with_label_values(&[queue.as_str(), r.as_str()]).set(0.0);
            } else {
                let _ = scalar.remove_label_values(&[queue.as_str(), r.as_str()]);
            }
        }
        self.scalars_seen =
            scalars.into_iter().chain(self.scalars_seen.iter().filter(|(_, q, _)| now.contains(q)).cloned()).collect();
        self.queues_seen = now;
    }
}

/// The number in Volcano's gang message "N/M tasks in gang unschedulable".
fn missing_tasks(message: &str) -> f64 {
    message.split('/').next().and_then(|n| n.trim().parse().ok()).unwrap_or(1.0)
}
