//! `tephra run`'s cycle beside the simulator's, on the same cluster, in one
//! run. The synthetic cluster is delivered to the Kubernetes driver's store
//! as the watch events an API server would send (one list, then one event
//! per bound pod), and both sides open sessions with the built-in plugins as
//! Wasm components. Prints per side: the first open (a full build), the
//! driver's part (events applied to the cluster), the open after the wave of
//! binds from the first cycle, and the open after a quiet period; and the
//! memory each side's cluster takes when read from the same API objects
//! (the simulator reads them as manifests; measured in a child process per
//! side).
//!
//!   cargo bench -p tephra --bench run_mode                  # 5k nodes / 50k pods
//!   TEPHRA_BENCH_SIZE=small cargo bench -p tephra --bench run_mode   # 1k / 10k

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::DynamicObject;
use kube::runtime::watcher::Event;
use serde_json::{json, Value};
use std::process::Command;
use std::time::{Duration, Instant};
use tephra::actions;
use tephra::config::SchedulerConfig;
use tephra::k8s::kinds::quantity;
use tephra::k8s::source::Store;
use tephra::k8s::watch::Change;
use tephra::manifest::{self, Object};
use tephra::model::{Cluster, Phase, Pod as ModelPod, PodPhase};
use tephra::policy::Policies;
use tephra::scheduler::Library;
use tephra::session::{Decision, Session};
use tephra::session_cache::SnapshotCache;
use tephra::synthetic::{generate, Spec, CONFIG};

fn spec() -> Spec {
    match std::env::var("TEPHRA_BENCH_SIZE").as_deref() {
        Ok("small") => Spec { nodes: 1000, pending_pods: 10_000, running_pods: 0, queues: 4, node_groups: 4, seed: 1 },
        _ => Spec { nodes: 5000, pending_pods: 50_000, running_pods: 0, queues: 8, node_groups: 8, seed: 2 },
    }
}

/// Internal units as the API writes quantities (the driver's own writer).
fn quantities(list: &std::collections::BTreeMap<String, f64>) -> Value {
    list.iter().map(|(k, v)| (k.clone(), json!(quantity(k, *v)))).collect::<serde_json::Map<_, _>>().into()
}

/// 2026-01-01T00:00:00Z, where `time` counts from.
const EPOCH_2026_MS: i64 = 1_767_225_600_000;

/// `seconds` after 2026-01-01 (less than a day) as the API writes times.
fn time(seconds: i64) -> String {
    format!("2026-01-01T{:02}:{:02}:{:02}Z", seconds / 3600 % 24, seconds / 60 % 60, seconds % 60)
}

/// A pod as the API server sends it.
fn api_pod(p: &ModelPod, rv: u64) -> Pod {
    let mut annotations = p.annotations.clone();
    if let Some(g) = &p.group {
        annotations.insert("scheduling.k8s.io/group-name".into(), g.clone());
    }
    if p.preemptable {
        annotations.insert("volcano.sh/preemptable".into(), "true".into());
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": p.name, "namespace": p.namespace, "uid": format!("uid-{}", p.key()),
                     "resourceVersion": rv.to_string(), "creationTimestamp": time(p.created),
                     "annotations": annotations, "labels": p.labels},
        "spec": {"schedulerName": p.scheduler_name, "nodeName": p.node,
                 "containers": [{"name": "main", "image": "busybox", "resources": {"requests": quantities(&p.requests)}}]},
        "status": {"phase": format!("{:?}", p.phase)},
    }))
    .expect("a valid Pod")
}

/// The number of the watch named `name`.
fn watch(name: &str) -> usize {
    tephra::k8s::source::watch(name).expect("a watch of that name")
}

/// The events of a first list of `c`, as the watches deliver them (one at
/// a time, as they are made).
fn listed(c: &Cluster, deliver: &mut dyn FnMut(Change)) {
    let mut out = Out(deliver);
    out.push(Change::of::<Node>(watch("nodes"), Event::Init));
    for n in c.nodes.iter() {
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": n.name, "uid": format!("uid-{}", n.name), "resourceVersion": "1", "labels": n.labels},
            "status": {"allocatable": quantities(&n.allocatable), "capacity": quantities(&n.allocatable)},
        }))
        .expect("a valid Node");
        out.push(Change::of(watch("nodes"), Event::InitApply(node)));
    }
    out.push(Change::of::<Node>(watch("nodes"), Event::InitDone));
    out.push(Change::of::<DynamicObject>(watch("queues"), Event::Init));
    for q in c.queues.iter() {
        let mut affinity = serde_json::Map::new();
        if let (Some(r), Some(p)) = (q.affinity.get("required"), q.affinity.get("preferred")) {
            affinity.insert(
                "nodeGroupAffinity".into(),
                json!({"requiredDuringSchedulingIgnoredDuringExecution": r,
                       "preferredDuringSchedulingIgnoredDuringExecution": p}),
            );
        }
        let o: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": q.name, "uid": format!("uid-{}", q.name), "resourceVersion": "1",
                         "creationTimestamp": time(q.created)},
            "spec": {"weight": q.weight as i64, "reclaimable": q.reclaimable, "affinity": affinity},
            "status": {"state": "Open"},
        }))
        .expect("a valid Queue");
        out.push(Change::of(watch("queues"), Event::InitApply(o)));
    }
    out.push(Change::of::<DynamicObject>(watch("queues"), Event::InitDone));
    out.push(Change::of::<DynamicObject>(watch("podgroups"), Event::Init));
    for g in c.podgroups.iter() {
        let phase = match g.phase {
            Phase::Inqueue => "Inqueue",
            Phase::Running => "Running",
            _ => "Pending",
        };
        let o: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": g.name, "namespace": g.namespace, "uid": format!("uid-{}", g.key()),
                         "resourceVersion": "1", "creationTimestamp": time(g.created)},
            "spec": {"minMember": g.min_member, "queue": g.queue,
                     "minResources": quantities(g.min_resources.as_ref().expect("synthetic groups have minResources"))},
            "status": {"phase": phase},
        }))
        .expect("a valid PodGroup");
        out.push(Change::of(watch("podgroups"), Event::InitApply(o)));
    }
    out.push(Change::of::<DynamicObject>(watch("podgroups"), Event::InitDone));
    out.push(Change::of::<Pod>(watch("pods"), Event::Init));
    for p in c.pods.iter() {
        out.push(Change::of(watch("pods"), Event::InitApply(api_pod(p, 1))));
    }
    out.push(Change::of::<Pod>(watch("pods"), Event::InitDone));
    // Other schedulers' pods: none here.
    out.push(Change::of::<Pod>(watch("bound pods of other schedulers"), Event::Init));
    out.push(Change::of::<Pod>(watch("bound pods of other schedulers"), Event::InitDone));
    out.push(Change::of::<PriorityClass>(watch("priorityclasses"), Event::Init));
    out.push(Change::of::<PriorityClass>(watch("priorityclasses"), Event::InitDone));
}

struct Out<'a>(&'a mut dyn FnMut(Change));

impl Out<'_> {
    fn push(&mut self, c: Change) {
        (self.0)(c)
    }
}

/// One side: a cluster, its cache and policies, and how bound pods reach it.
struct Side {
    name: &'static str,
    cluster: Cluster,
    /// The run side's store (the simulator changes its cluster directly).
    store: Option<Store>,
    cache: SnapshotCache,
    policies: Option<Policies>,
    rv: u64,
}

#[derive(Default)]
struct Figures {
    first_open: Duration,
    first_cycle_binds: usize,
    /// Applying the wave of bind events (run side) or the binds (simulator).
    prepare: Duration,
    open_after_wave: Duration,
    quiet_opens: Vec<Duration>,
}

impl Side {
    /// The first cycle's binds reach the cluster: the simulator sets them,
    /// the driver gets one watch event per bound pod (running).
    fn bind(&mut self, binds: &[(usize, String)]) -> Duration {
        self.rv += 1;
        let start = Instant::now();
        match &mut self.store {
            None => {
                for (i, node) in binds {
                    let p = self.cluster.pods.status_mut(*i);
                    *p.node = Some(node.clone());
                    *p.phase = PodPhase::Running;
                }
                start.elapsed()
            }
            Some(store) => {
                // The events are made before the clock starts: the API server makes them.
                let events: Vec<Change> = binds
                    .iter()
                    .map(|(i, node)| {
                        let mut p = self.cluster.pods[*i].clone();
                        // Back to the seconds `time` takes (the store read them as ms since the epoch).
                        p.created = (p.created - EPOCH_2026_MS) / 1000;
                        p.node = Some(node.clone());
                        p.phase = PodPhase::Running;
                        Change::of(watch("pods"), Event::Apply(api_pod(&p, self.rv)))
                    })
                    .collect();
                let start = Instant::now();
                for e in events {
                    store.apply(&mut self.cluster, e);
                }
                store.settle(&mut self.cluster);
                start.elapsed()
            }
        }
    }

    fn run(&mut self, config: &SchedulerConfig, lib: &Library) -> Figures {
        let mut f = Figures::default();
        let none = Default::default();
        let open = |side: &mut Side, now: i64| {
            let policies = side.policies.take().unwrap_or_else(|| lib.policies(config, None).0);
            let start = Instant::now();
            let ssn =
                Session::open_cached(&mut side.cache, &side.cluster, policies, &none, now, 42, &Default::default());
            (ssn, start.elapsed())
        };
        let (mut ssn, t) = open(self, 0);
        f.first_open = t;
        for a in &config.actions {
            (actions::by_name(a).expect("a known action"))(&mut ssn);
        }
        let (out, policies) = ssn.close_cached(&mut self.cache);
        self.policies = Some(policies);
        let binds: Vec<(usize, String)> = out
            .decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Bind { task, node } => {
                    Some((out.extra.task_pod[*task as usize], out.names.nodes[*node as usize].clone()))
                }
                _ => None,
            })
            .collect();
        f.first_cycle_binds = binds.len();
        f.prepare = self.bind(&binds);
        let (ssn, t) = open(self, 1000);
        f.open_after_wave = t;
        self.policies = Some(ssn.close_cached(&mut self.cache).1);
        for now in 0..3 {
            let (ssn, t) = open(self, 2000 + now);
            f.quiet_opens.push(t);
            self.policies = Some(ssn.close_cached(&mut self.cache).1);
        }
        f
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1))?.parse().ok()
        })
        .map_or(0.0, |kb: f64| kb / 1024.0)
}

/// The cluster `tephra simulate` holds for the same objects: each read
/// from its YAML by the manifest reader.
fn read_as_simulate(sim: &Cluster) -> Cluster {
    fn read<K: serde::Serialize>(o: &K, kind: Option<&str>) -> Object {
        let mut v = yaml_serde::to_value(o).expect("serializable");
        if let (Some(kind), Some(m)) = (kind, v.as_mapping_mut()) {
            m.insert("kind".into(), kind.into());
        }
        manifest::from_value(&v, "bench").expect("readable")
    }
    let mut c = Cluster::default();
    listed(sim, &mut |change| {
        // Only what a first list delivers.
        let (Some(_), Some(o)) = (&change.listed, &change.object) else { return };
        let object = if let Some(o) = o.downcast_ref::<Node>() {
            read(o, None)
        } else if let Some(o) = o.downcast_ref::<Pod>() {
            read(o, None)
        } else if let Some(o) = o.downcast_ref::<DynamicObject>() {
            read(o, Some(if change.watch == watch("podgroups") { "PodGroup" } else { "Queue" }))
        } else {
            return;
        };
        match object {
            Object::Node(n) => c.nodes.push(n),
            Object::Queue(q) => c.queues.push(q),
            Object::PodGroup(g) => c.podgroups.push(g),
            Object::Pod(p) => c.pods.push(*p),
            _ => {}
        }
    });
    c
}

/// A child process's measure: the memory one side's cluster (and store)
/// takes, as the growth of the resident set while it is built from the same
/// objects, one at a time.
fn child(side: &str) {
    let sim = generate(&spec());
    let base = rss_mib();
    if side == "sim" {
        let c = read_as_simulate(&sim);
        println!("{:.1}", rss_mib() - base);
        drop((c, sim));
        return;
    }
    let mut store = Store::default();
    let mut cluster = Cluster::default();
    listed(&sim, &mut |e| store.apply(&mut cluster, e));
    store.settle(&mut cluster);
    println!("{:.1}", rss_mib() - base);
    drop((store, cluster, sim));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        return child(&args[i + 1]);
    }
    let spec = spec();
    let config = SchedulerConfig::parse(CONFIG, "bench config").unwrap();
    let lib = Library::load(None).unwrap();
    let sim = generate(&spec);
    println!(
        "{} nodes, {} pods ({} pending), {} jobs; built-in plugins as Wasm components",
        sim.nodes.len(),
        sim.pods.len(),
        spec.pending_pods,
        sim.podgroups.len()
    );
    let mut store = Store::default();
    let mut run_cluster = Cluster::default();
    let start = Instant::now();
    listed(&sim, &mut |e| store.apply(&mut run_cluster, e));
    store.settle(&mut run_cluster);
    println!("run side: the first list made and applied in {:.0} ms", ms(start.elapsed()));
    let invalid = store.take_invalid();
    assert!(invalid.is_empty(), "objects the store could not read: {invalid:?}");
    assert_eq!(run_cluster.pods.len(), sim.pods.len());
    assert_eq!(run_cluster.nodes.len(), sim.nodes.len());
    let mut sides = [
        Side { name: "simulate", cluster: sim, store: None, cache: SnapshotCache::default(), policies: None, rv: 1 },
        Side {
            name: "run",
            cluster: run_cluster,
            store: Some(store),
            cache: SnapshotCache::default(),
            policies: None,
            rv: 1,
        },
    ];
    println!(
        "{:<9} {:>14} {:>7} {:>18} {:>19} {:>14}  {:>8}",
        "side", "first open ms", "binds", "wave applied ms", "open after wave ms", "quiet open ms", "opens"
    );
    for side in &mut sides {
        let f = side.run(&config, &lib);
        let quiet = f.quiet_opens.iter().copied().min().unwrap_or_default();
        println!(
            "{:<9} {:>14.1} {:>7} {:>18.1} {:>19.2} {:>14.2}  {:?}",
            side.name,
            ms(f.first_open),
            f.first_cycle_binds,
            ms(f.prepare),
            ms(f.open_after_wave),
            ms(quiet),
            side.cache.opens
        );
    }
    let exe = std::env::current_exe().unwrap();
    let mem = |side: &str| -> f64 {
        let out = Command::new(&exe).args(["--child", side]).output().expect("the child runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().parse().expect("a figure")
    };
    let (sim_mb, run_mb) = (mem("sim"), mem("run"));
    println!(
        "memory of the cluster read from the same objects: simulate {sim_mb:.0} MiB, run {run_mb:.0} MiB \
         (cluster + store) = {:.2}x",
        run_mb / sim_mb
    );
}
