//! Decayed usage, the ledger behind fair share from history (Slurm's
//! multifactor fair share): per queue, and per namespace within it, the
//! cluster share it held over time (the dominant share of the cluster's
//! allocatable, times seconds), halved every `halfLife`. The loop brings it
//! up to date before each cycle and persists it on each Queue as the
//! annotation [`USAGE`], where the `decayed-usage` plugin reads it and where
//! a restarted or new leader picks it up.

use std::collections::BTreeMap;
use tephra_model::cluster::{Cluster, PodPhase};
use tephra_readers::config::SchedulerConfig;

/// The Queue annotation holding its usage:
/// `total=<cluster-seconds>;at=<ms since the epoch>;ns/<namespace>=<cluster-seconds>…`.
pub const USAGE: &str = "tephra.io/usage";
/// The plugin that orders by usage, whose arguments the ledger follows.
pub const PLUGIN: &str = "decayed-usage";
/// Slurm's default half-life: 7 days.
const HALF_LIFE_MS: i64 = 7 * 86_400_000;
/// How often usage is written to the Queues by default.
const PERSIST_MS: i64 = 60_000;

/// One queue's usage at the ledger's time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Usage {
    /// The queue's share of the cluster × seconds, decayed.
    pub total: f64,
    /// The same per namespace of its jobs.
    pub namespaces: BTreeMap<String, f64>,
}

/// Per queue usage, decayed to `at_ms`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ledger {
    /// Usage halves every this long (`halfLife`).
    pub half_life_ms: i64,
    /// How often it is written to the Queues (`persistPeriod`).
    pub persist_ms: i64,
    /// The time the figures stand at.
    pub at_ms: Option<i64>,
    /// Per queue, its usage.
    pub queues: BTreeMap<String, Usage>,
    persisted_ms: Option<i64>,
}

/// The plugin's `halfLife` and `persistPeriod` when the config has it.
pub fn settings(config: &SchedulerConfig) -> Option<(i64, i64)> {
    let p = config.tiers.iter().flatten().find(|p| p.name == PLUGIN)?;
    let arg = |key: &str| p.arguments.iter().find(|(k, _)| k == key).and_then(|(_, v)| parse(v));
    Some((arg("halfLife").unwrap_or(HALF_LIFE_MS), arg("persistPeriod").unwrap_or(PERSIST_MS)))
}

/// A Go duration, or whole days (`7d`).
fn parse(v: &str) -> Option<i64> {
    match v.strip_suffix('d').and_then(|d| d.parse::<f64>().ok()) {
        Some(days) => Some((days * 86_400_000.0) as i64),
        None => tephra_model::duration::duration_ms(v),
    }
    .filter(|&ms| ms > 0)
}

/// Sets a queue's usage annotation on the cluster's copy of the Queue.
pub fn annotate(cluster: &mut Cluster, queue: &str, value: String) {
    if let Some(q) = cluster.queues.iter_mut().find(|q| q.name == queue) {
        q.annotations.insert(USAGE.into(), value);
    }
}

impl Usage {
    /// Reads the annotation; `None` when it does not parse (the queue starts
    /// from nothing, with a warning from the caller).
    pub fn parse(s: &str) -> Option<(Usage, i64)> {
        let mut u = Usage::default();
        let mut at = None;
        for part in s.split(';').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=')?;
            match k {
                "total" => u.total = v.parse().ok()?,
                "at" => at = Some(v.parse().ok()?),
                _ => {
                    u.namespaces.insert(k.strip_prefix("ns/")?.to_string(), v.parse().ok()?);
                }
            }
        }
        Some((u, at?))
    }

    fn render(&self, at_ms: i64) -> String {
        let mut s = format!("total={};at={at_ms}", round(self.total));
        for (ns, v) in &self.namespaces {
            s.push_str(&format!(";ns/{ns}={}", round(*v)));
        }
        s
    }

    fn decay(&mut self, f: f64) {
        self.total *= f;
        self.namespaces.values_mut().for_each(|v| *v *= f);
    }
}

/// Six significant digits: enough for ordering, short in the annotation.
fn round(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return 0.0;
    }
    let scale = 10f64.powi(5 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

impl Ledger {
    /// The usage persisted on `cluster`'s Queues, each decayed to the
    /// latest of their times; warnings name queues whose annotation is bad.
    pub fn adopt(cluster: &Cluster, half_life_ms: i64, persist_ms: i64) -> (Ledger, Vec<String>) {
        let mut found = Vec::new();
        let mut warnings = Vec::new();
        for q in cluster.queues.iter() {
            let Some(v) = q.annotations.get(USAGE) else { continue };
            match Usage::parse(v) {
                Some((u, at)) => found.push((q.name.clone(), u, at)),
                None => warnings
                    .push(format!("queue {}: annotation {USAGE}: {v:?} does not parse; starting from 0", q.name)),
            }
        }
        let at = found.iter().map(|f| f.2).max();
        let mut ledger = Ledger { half_life_ms, persist_ms, at_ms: at, queues: BTreeMap::new(), persisted_ms: at };
        for (name, mut u, t) in found {
            u.decay(ledger.factor(at.unwrap_or(t) - t));
            ledger.queues.insert(name, u);
        }
        (ledger, warnings)
    }

    fn factor(&self, dt_ms: i64) -> f64 {
        0.5f64.powf(dt_ms.max(0) as f64 / self.half_life_ms as f64)
    }

    /// Decays to `now_ms` and adds what runs now for the time since the
    /// last account (the allocation seen at a cycle stands for the period
    /// before it).
    pub fn account(&mut self, cluster: &Cluster, now_ms: i64) {
        let Some(at) = self.at_ms.replace(now_ms) else { return };
        if now_ms <= at {
            return;
        }
        let f = self.factor(now_ms - at);
        self.queues.values_mut().for_each(|u| u.decay(f));
        let secs = (now_ms - at) as f64 / 1000.0;
        let mut capacity: BTreeMap<&str, f64> = BTreeMap::new();
        for n in cluster.nodes.iter() {
            for (k, v) in n.allocatable.iter().filter(|(k, _)| k.as_str() != "pods") {
                *capacity.entry(k).or_default() += v;
            }
        }
        let queue_of: BTreeMap<(&str, &str), &str> =
            cluster.podgroups.iter().map(|g| ((g.namespace.as_str(), g.name.as_str()), g.queue.as_str())).collect();
        for p in cluster.pods.iter() {
            let placed = p.node.is_some() && !p.deleting && matches!(p.phase, PodPhase::Running | PodPhase::Pending);
            let Some(q) = p.group.as_deref().and_then(|g| queue_of.get(&(p.namespace.as_str(), g))) else { continue };
            if !placed {
                continue;
            }
            let share = p
                .requests
                .iter()
                .filter_map(|(k, v)| capacity.get(k.as_str()).filter(|c| **c > 0.0).map(|c| v / c))
                .fold(0.0, f64::max);
            let u = self.queues.entry(q.to_string()).or_default();
            u.total += share * secs;
            *u.namespaces.entry(p.namespace.clone()).or_default() += share * secs;
        }
    }

    /// The annotations to write when a persist is due, by queue.
    pub fn due(&mut self, now_ms: i64) -> Vec<(String, String)> {
        if self.persisted_ms.is_some_and(|p| now_ms - p < self.persist_ms) {
            return Vec::new();
        }
        self.persisted_ms = Some(now_ms);
        let at = self.at_ms.unwrap_or(now_ms);
        self.queues.iter().map(|(q, u)| (q.clone(), u.render(at))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_model::cluster::{Node, Pod, PodGroup, Queue};

    #[test]
    fn usage_halves_every_half_life_and_grows_with_what_runs() {
        let mut c = Cluster::default();
        c.nodes.push(Node { name: "n".into(), allocatable: [("cpu".into(), 4.0)].into(), ..Default::default() });
        c.queues.push(Queue {
            name: "a".into(),
            annotations: [(USAGE.into(), "total=100;at=0;ns/x=100".into())].into(),
            ..Default::default()
        });
        c.podgroups.push(PodGroup { namespace: "y".into(), name: "g".into(), queue: "a".into(), ..Default::default() });
        let (mut l, warnings) = Ledger::adopt(&c, 10_000, 1_000);
        assert!(warnings.is_empty());
        l.account(&c, 10_000);
        assert_eq!(l.queues["a"].total, 50.0);
        c.pods.push(Pod {
            namespace: "y".into(),
            name: "p".into(),
            group: Some("g".into()),
            node: Some("n".into()),
            phase: PodPhase::Running,
            requests: [("cpu".into(), 2.0)].into(),
            ..Default::default()
        });
        l.account(&c, 20_000);
        // 50 halves to 25, plus half the cluster for 10 s.
        assert_eq!(l.queues["a"].total, 30.0);
        assert_eq!(l.queues["a"].namespaces["y"], 5.0);
        assert_eq!(l.due(20_000), [("a".to_string(), "total=30;at=20000;ns/x=25;ns/y=5".to_string())]);
        assert!(l.due(20_500).is_empty());
        assert_eq!(Usage::parse("total=30;at=20000;ns/x=25").map(|u| u.1), Some(20_000));
        assert_eq!(Usage::parse("total=x;at=1"), None);
        assert_eq!(parse("7d"), Some(HALF_LIFE_MS));
    }
}
