//! Per-call cost of plugins by guest language, measured side by side on the
//! same snapshot: Rust (SDK), Python (componentize-py), JavaScript
//! (componentize-js), Go (wit-bindgen's Go generator, `tephra plugin componentize`). Needs the guests built (`./dev test` builds them into
//! target/guests). Run: `TEPHRA_GUESTS_DIR=target/guests cargo bench -p tephra --bench guests`.

use std::path::Path;
use std::time::{Duration, Instant};
use tephra::config::{PluginConf, SchedulerConfig};
use tephra::model::{Cluster, Node, Phase, Pod, PodGroup, Queue};
use tephra::plugin::Call;
use tephra::scheduler::Library;
use tephra::session::Session;

const NODES: usize = 1000;
const JOBS: usize = 1000;
const TASKS_PER_JOB: usize = 5;

fn cluster() -> Cluster {
    let mut c = Cluster::default();
    for i in 0..NODES {
        c.nodes.push(Node {
            name: format!("n{i}"),
            allocatable: [("cpu".into(), 64000.0), ("memory".into(), 256e9), ("pods".into(), 110.0)].into(),
            labels: [("zone".to_string(), if i % 2 == 0 { "east" } else { "west" }.to_string())].into(),
            ..Default::default()
        });
    }
    c.queues.push(Queue { name: "q".into(), weight: 1.0, reclaimable: true, ..Default::default() });
    for j in 0..JOBS {
        let ns = format!("team-{}", j % 7);
        c.podgroups.push(PodGroup {
            namespace: ns.clone(),
            name: format!("j{j}"),
            queue: "q".into(),
            min_member: 1,
            phase: Phase::Inqueue,
            ..Default::default()
        });
        for t in 0..TASKS_PER_JOB {
            c.pods.push(Pod {
                namespace: ns.clone(),
                name: format!("j{j}-t-{t}"),
                group: Some(format!("j{j}")),
                requests: [("cpu".into(), 1000.0)].into(),
                preemptable: true,
                ..Default::default()
            });
        }
    }
    c
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

/// (open-session µs, per-call µs) of `name`, calling `call` `runs` times;
/// the plugin's first fault instead, if it had one.
fn measure(
    lib: &Library,
    name: &str,
    args: &[(&str, &str)],
    c: &Cluster,
    call: &dyn Fn(&mut Session),
) -> Result<(f64, f64), String> {
    let mut conf = PluginConf::new(name);
    conf.arguments = args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let config = SchedulerConfig {
        actions: vec![],
        tiers: vec![vec![conf]],
        action_args: Default::default(),
        unset_is_on: true,
        limits: Default::default(),
    };
    let (mut opens, mut calls) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let (policies, missing) = lib.policies(&config, None);
        assert!(missing.is_empty(), "{name} not loaded");
        let t = Instant::now();
        let mut ssn = Session::open(c, policies, &Default::default(), 0, 1);
        opens.push(t.elapsed());
        for _ in 0..20 {
            let t = Instant::now();
            call(&mut ssn);
            calls.push(t.elapsed());
        }
        if let Some(f) = ssn.policies.faults.first() {
            return Err(format!("{}: {}", f.point, f.message));
        }
        ssn.close();
    }
    Ok((median(opens), median(calls)))
}

fn main() {
    let Some(dir) = std::env::var_os("TEPHRA_GUESTS_DIR") else {
        eprintln!("set TEPHRA_GUESTS_DIR to the directory ./dev test builds the guests into (target/guests)");
        return;
    };
    // Cargo runs benches in the package directory; a relative path means the
    // workspace root, where the documented command is typed.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
    let mut lib = Library::load(None).unwrap();
    for f in ["fair-team.wasm", "spread-label.wasm", "gpu-pack.wasm"] {
        lib.load_file(&Path::new(&dir).join(f)).unwrap();
    }
    let c = cluster();
    let jobs: Vec<u32> = (0..JOBS as u32).collect();
    let nodes: Vec<u32> = (0..NODES as u32).collect();
    let job_order = |ssn: &mut Session| drop(ssn.policies.order_keys(&[], Call::JobOrder(&jobs), jobs.len()));
    let node_order = |ssn: &mut Session| drop(ssn.policies.node_scores(&[], 0, &nodes));
    println!("{NODES} nodes, {JOBS} jobs, {} tasks; medians in µs", JOBS * TASKS_PER_JOB);
    println!("{:<34} {:>14} {:>12} {:>14}", "plugin (language), call", "open-session", "per call", "per id/node");
    let rows = [
        ("priority (Rust), job-order", measure(&lib, "priority", &[], &c, &job_order), JOBS),
        ("fair-team (Python), job-order", measure(&lib, "fair-team", &[("usage.team-1", "5")], &c, &job_order), JOBS),
        ("nodeorder (Rust), node-order", measure(&lib, "nodeorder", &[], &c, &node_order), NODES),
        (
            "spread-label (JS), node-order",
            measure(&lib, "spread-label", &[("label", "zone=east")], &c, &node_order),
            NODES,
        ),
        // The cluster has no GPUs: gpu-pack's score is a dimension lookup per node.
        ("gpu-pack (Go), node-order", measure(&lib, "gpu-pack", &[("resource", "cpu")], &c, &node_order), NODES),
    ];
    for (what, measured, n) in rows {
        match measured {
            Ok((open, call)) => println!("{what:<34} {open:>14.1} {call:>12.1} {:>14.3}", call / n as f64),
            Err(fault) => println!("{what:<34} FAULT {fault}"),
        }
    }
}
