//! What the scheduling benchmarks share: policies from the Wasm library or
//! native builds of the same plugin crates, and cycles run until nothing
//! more is placed, binding as a kubelet would.

use super::native::Native;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tephra::actions;
use tephra::config::SchedulerConfig;
use tephra::model::{Cluster, PodPhase};
use tephra::plugin::Backend;
use tephra::policy::{Policies, Slot};
use tephra::scheduler::Library;
use tephra::session::{Decision, Session};
use tephra::session_cache::SnapshotCache;

pub fn native_backend(name: &str) -> Box<dyn Backend> {
    match name {
        "priority" => Native::<plugin_priority::Priority>::boxed(),
        "gang" => Native::<plugin_gang::Gang>::boxed(),
        "drf" => Native::<plugin_drf::Drf>::boxed(),
        "predicates" => Native::<plugin_predicates::Predicates>::boxed(),
        "proportion" => Native::<plugin_proportion::Proportion>::boxed(),
        "nodegroup" => Native::<plugin_nodegroup::NodeGroup>::boxed(),
        "nodeorder" => Native::<plugin_nodeorder::NodeOrder>::boxed(),
        "binpack" => Native::<plugin_binpack::Binpack>::boxed(),
        "conformance" => Native::<plugin_conformance::Conformance>::boxed(),
        "network-topology-aware" => Native::<plugin_network_topology_aware::NetworkTopologyAware>::boxed(),
        other => panic!("no native build of {other}"),
    }
}

pub fn policies(config: &SchedulerConfig, lib: Option<&Library>) -> Policies {
    match lib {
        Some(lib) => lib.policies(config, None).0,
        None => Policies::new(
            config
                .tiers
                .iter()
                .map(|t| t.iter().map(|c| Slot::new(c.clone(), native_backend(&c.name))).collect())
                .collect(),
            config.unset_is_on,
        ),
    }
}

#[derive(Default)]
pub struct Run {
    pub cycles: Vec<Duration>,
    pub opens: Vec<Duration>,
    /// Opens of sessions on a cluster that did not change since the last one.
    pub idle_opens: Vec<Duration>,
    /// Per plugin, its part of the second open (after the first cycle's binds).
    pub second_open: Vec<(String, Duration)>,
    /// The plugins' part of the second open, wall clock.
    pub second_plugins: Duration,
    pub actions: BTreeMap<String, Duration>,
    /// Seconds inside each plugin's calls, and the number of calls.
    pub plugins: BTreeMap<String, (f64, u64)>,
    pub binds: usize,
    /// Time of the cycles that placed something: until every pod is placed.
    pub placing: Duration,
    /// The cluster with the binds made.
    pub placed: Cluster,
}

pub fn pct(v: &[Duration], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort();
    s[((s.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e3
}

/// Cycles until nothing more is placed (at most 10), binding as a kubelet would.
pub fn run(cluster: &Cluster, config: &SchedulerConfig, lib: Option<&Library>) -> Run {
    let mut c = cluster.clone();
    let mut pol = policies(config, lib);
    let mut r = Run::default();
    let mut cache = SnapshotCache::default();
    let none = Default::default();
    for cycle in 0..10 {
        let start = Instant::now();
        let mut ssn =
            Session::open_cached(&mut cache, &c, pol, &none, cycle * 1000, 42 + cycle as u64, &Default::default());
        r.opens.push(start.elapsed());
        if cycle == 1 {
            r.second_open = ssn.policies.open_times();
            r.second_plugins = ssn.policies.opened_in;
        }
        ssn.actions = config.actions.clone();
        for a in &config.actions {
            let t = Instant::now();
            (actions::by_name(a).unwrap())(&mut ssn);
            *r.actions.entry(a.clone()).or_default() += t.elapsed();
        }
        assert!(ssn.policies.faults.is_empty(), "{:?}", ssn.policies.faults);
        let (out, mut p) = ssn.close_cached(&mut cache);
        r.cycles.push(start.elapsed());
        for (name, calls, secs) in p.take_call_stats() {
            let e = r.plugins.entry(name).or_default();
            e.0 += secs;
            e.1 += calls;
        }
        pol = p;
        let mut bound = 0;
        for d in &out.decisions {
            if let Decision::Bind { task, node } = d {
                let pod = c.pods.status_mut(out.extra.task_pod[*task as usize]);
                *pod.node = Some(out.names.nodes[*node as usize].clone());
                *pod.phase = PodPhase::Running;
                bound += 1;
            }
        }
        r.binds += bound;
        if bound == 0 {
            break;
        }
        r.placing += *r.cycles.last().unwrap();
    }
    // A quiet cluster: what every cycle costs when nothing moves.
    for cycle in 0..3 {
        let start = Instant::now();
        let ssn = Session::open_cached(&mut cache, &c, pol, &none, 20_000 + cycle, 7, &Default::default());
        r.idle_opens.push(start.elapsed());
        pol = ssn.close_cached(&mut cache).1;
    }
    r.placed = c;
    r
}

pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string())
        })
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}
