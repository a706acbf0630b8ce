//! What a simulated cycle shows a user, as text or JSON.

use serde::Serialize;
use std::fmt::Write;
use tephra_model::resource::{display, ResourceList};

pub use tephra_scheduler::queues::QueueRow;

/// Everything that happened in one cycle.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CycleReport {
    /// The cycle's number, from 1.
    pub cycle: usize,
    /// Simulated seconds since the start.
    pub time: f64,
    /// Objects that arrived.
    pub arrivals: Vec<String>,
    /// Pods that started running.
    pub started: Vec<String>,
    /// Pods that completed.
    pub completed: Vec<String>,
    /// Pods made again after an eviction.
    pub restarted: Vec<String>,
    /// Pods ended at their time limit: "ns/pod after 30s (what set it)".
    pub overran: Vec<String>,
    /// Pods a workload controller made (Deployment, StatefulSet, Job…).
    pub made: Vec<String>,
    /// Jobs (`batch/v1`) that completed or failed.
    pub finished: Vec<String>,
    /// PodGroups admitted (Pending → Inqueue).
    pub admitted: Vec<String>,
    /// (pod, node)
    pub binds: Vec<(String, String)>,
    /// Claims bound with their pods' placements (to a volume, or
    /// provisioned on the node).
    pub volumes: Vec<String>,
    /// DRA claims allocated (or reserved) with their pods' placements.
    pub devices: Vec<String>,
    /// (pod, node, reason)
    pub evictions: Vec<(String, String, String)>,
    /// The queue of each eviction's pod, in the same order.
    pub eviction_queues: Vec<String>,
    /// PodGroups that arrived or were made this cycle: (key, queue).
    pub new_jobs: Vec<(String, String)>,
    /// What the nodes hold in all.
    pub capacity: ResourceList,
    /// (pod, node): reserved this cycle, not bound.
    pub pipelined: Vec<(String, String)>,
    /// (job or job's subgroup, HyperNode and tier): where a topology-aware
    /// placement put it.
    pub domains: Vec<(String, String)>,
    /// (podgroup, new phase)
    pub phases: Vec<(String, String)>,
    /// Each queue's figures after the cycle.
    pub queues: Vec<QueueRow>,
    /// The plugin whose deserved shares the rows carry.
    pub quota_plugin: Option<String>,
    /// (pod or job, why it is still waiting)
    pub pending: Vec<(String, String)>,
    /// Plugin faults (the cycle went on without the plugin).
    pub faults: Vec<String>,
    /// Plugin versions swapped, rolled back, rejected; config reloads.
    pub notices: Vec<String>,
    /// What each shadow plugin would have decided differently.
    pub shadow: Vec<tephra_scheduler::ShadowDiff>,
    /// Big jobs holding a reservation: (job, locked nodes).
    pub targets: Vec<(String, Vec<String>)>,
    /// Per big job, when it is predicted to start (simulated seconds; none
    /// when something on its nodes has no limit or estimate).
    pub starts: Vec<(String, Option<f64>)>,
    /// Every reserving queue's `status.reservation`.
    pub reservations: Vec<ReservationRow>,
    /// Every advance reservation's status.
    #[serde(skip)]
    pub windows: Vec<tephra_session::window::WindowStatus>,
}

/// A queue's `status.reservation`: its locked nodes and their idle total.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReservationRow {
    /// The queue.
    pub queue: String,
    /// Its locked nodes.
    pub nodes: Vec<String>,
    /// Their idle total.
    pub idle: ResourceList,
    /// Why the policy refused to reserve.
    pub refused: Option<String>,
}

impl CycleReport {
    /// Nothing was decided or changed.
    pub fn is_quiet(&self) -> bool {
        self.arrivals.is_empty()
            && self.started.is_empty()
            && self.completed.is_empty()
            && self.restarted.is_empty()
            && self.overran.is_empty()
            && self.made.is_empty()
            && self.finished.is_empty()
            && self.admitted.is_empty()
            && self.binds.is_empty()
            && self.volumes.is_empty()
            && self.devices.is_empty()
            && self.evictions.is_empty()
            && self.phases.is_empty()
    }

    /// Human-readable lines; the queue table only when it differs from `prev`.
    pub fn text(&self, prev: Option<&CycleReport>) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "── cycle {} (t={}s) ──", self.cycle, self.time);
        let mut line = |tag: &str, what: String| {
            let _ = writeln!(s, "  {tag:<10} {what}");
        };
        for a in &self.arrivals {
            line("arrived", a.clone());
        }
        for p in &self.completed {
            line("completed", p.clone());
        }
        for p in &self.overran {
            line("timeout", p.clone());
        }
        for p in &self.restarted {
            line("restarted", format!("{p} (recreated by its job)"));
        }
        for p in &self.made {
            line("created", p.clone());
        }
        for j in &self.finished {
            line("finished", j.clone());
        }
        for p in &self.started {
            line("running", p.clone());
        }
        for j in &self.admitted {
            line("admitted", j.clone());
        }
        for v in &self.volumes {
            line("volume", v.clone());
        }
        for d in &self.devices {
            line("devices", d.clone());
        }
        for (p, n) in &self.binds {
            line("bind", format!("{p} → {n}"));
        }
        for (p, n) in &self.pipelined {
            line("pipelined", format!("{p} → {n} (waits for resources being freed)"));
        }
        for (j, h) in &self.domains {
            line("domain", format!("{j} → {h}"));
        }
        for (p, n, why) in &self.evictions {
            line("evict", format!("{p} on {n}: {why}"));
        }
        for (g, ph) in &self.phases {
            line("phase", format!("{g} → {ph}"));
        }
        for f in &self.faults {
            line("FAULT", f.clone());
        }
        for n in &self.notices {
            line("plugins", n.clone());
        }
        for d in &self.shadow {
            if d.count() == 0 {
                line("shadow", format!("{}: same decisions", d.plugin));
            }
            for m in &d.moved {
                line("shadow", format!("{} would place {m}", d.plugin));
            }
            for b in &d.binds_shadow_only {
                line("shadow", format!("{} would bind {b}", d.plugin));
            }
            for b in &d.binds_live_only {
                line("shadow", format!("{} would not bind {b}", d.plugin));
            }
            for e in &d.evictions_shadow_only {
                line("shadow", format!("{} would evict {e}", d.plugin));
            }
            for e in &d.evictions_live_only {
                line("shadow", format!("{} would not evict {e}", d.plugin));
            }
            for p in &d.phases {
                line("shadow", format!("{} would change phase of {p} (live vs shadow)", d.plugin));
            }
        }
        let same = prev.is_some_and(|p| format!("{:?}", p.queues) == format!("{:?}", self.queues));
        if !self.queues.is_empty() && !same {
            let _ = writeln!(
                s,
                "  queues{}:",
                self.quota_plugin.as_ref().map(|p| format!(" (deserved by {p})")).unwrap_or_default()
            );
            for q in self.queues.iter().filter(|q| q.jobs > 0) {
                let alloc = fmt_list(&q.allocated);
                let des = q.deserved.as_ref().map(|d| format!("  deserved {}", fmt_list(d))).unwrap_or_default();
                let share = q.share.map(|x| format!("  share {x:.2}")).unwrap_or_default();
                let _ = writeln!(s, "    {:<12} allocated {alloc}{des}{share}", q.name);
            }
        }
        let same = prev.is_some_and(|p| {
            p.targets == self.targets && p.reservations == self.reservations && p.starts == self.starts
        });
        if !same {
            for (j, nodes) in &self.targets {
                let start = match self.starts.iter().find(|s| s.0 == *j) {
                    Some((_, Some(at))) => format!(" (starts by t={at}s)"),
                    _ => String::new(),
                };
                let _ = writeln!(s, "  reserved   job {j}: {}{start}", list_or_none(nodes));
            }
            for r in &self.reservations {
                let what = match &r.refused {
                    Some(why) => format!("refused: {why}"),
                    None => format!("{} (idle {})", list_or_none(&r.nodes), fmt_list(&r.idle)),
                };
                let _ = writeln!(s, "  reserved   queue {}: {what}", r.queue);
            }
        }
        if prev.is_none_or(|p| p.windows != self.windows) {
            for w in &self.windows {
                let when = match w.window {
                    Some((a, b)) => format!(" (window t={}s–{}s)", a as f64 / 1000.0, b as f64 / 1000.0),
                    None => String::new(),
                };
                let _ = writeln!(s, "  reservation {}: {} on {}{when}", w.name, w.state, list_or_none(&w.nodes));
            }
        }
        for (p, why) in &self.pending {
            let _ = writeln!(s, "  waiting    {p}: {why}");
        }
        s
    }
}

/// A job's wait: from arrival (t=0 for jobs present at the start) until it
/// first ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Wait {
    /// `namespace/name`.
    pub job: String,
    /// When it arrived (simulated seconds).
    pub arrived: f64,
    /// When it first ran, if it did.
    pub running: Option<f64>,
}

/// Every job that arrived or started during the run, in arrival order.
pub fn waits(reports: &[CycleReport]) -> Vec<Wait> {
    let mut out: Vec<Wait> = Vec::new();
    for r in reports {
        for a in &r.arrivals {
            // A plain pod's PodGroup is made by the podgroup controller.
            let job = match (a.strip_prefix("podgroup "), a.strip_prefix("pod ").and_then(|p| p.split_once('/'))) {
                (Some(g), _) => g.to_string(),
                (None, Some((ns, pod))) => format!("{ns}/podgroup-{pod}"),
                _ => continue,
            };
            out.push(Wait { job, arrived: r.time, running: None });
        }
        for (g, _) in r.phases.iter().filter(|(_, ph)| ph == "Running") {
            match out.iter_mut().find(|w| w.job == *g) {
                Some(w) if w.running.is_none() => w.running = Some(r.time),
                Some(_) => {}
                None => out.push(Wait { job: g.clone(), arrived: 0.0, running: Some(r.time) }),
            }
        }
    }
    out
}

/// The waits as text lines, one per job.
pub fn waits_text(reports: &[CycleReport]) -> String {
    let end = reports.last().map_or(0.0, |r| r.time);
    let mut s = String::from(
        "waits (arrival → first running):
",
    );
    for w in waits(reports) {
        let _ = match w.running {
            Some(t) => writeln!(s, "  {:<24} {}s (t={}s → t={t}s)", w.job, t - w.arrived, w.arrived),
            None => writeln!(s, "  {:<24} still waiting at t={end}s (arrived t={}s)", w.job, w.arrived),
        };
    }
    s
}

fn list_or_none(l: &[String]) -> String {
    if l.is_empty() {
        "no nodes".into()
    } else {
        l.join(", ")
    }
}

/// `cpu 2, memory 4Gi` (pods left out).
pub fn fmt_list(l: &ResourceList) -> String {
    let parts: Vec<String> =
        l.iter().filter(|(k, _)| k.as_str() != "pods").map(|(k, v)| format!("{k} {}", display(k, *v))).collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}
