//! Topology-aware gangs at scale: 5,000 nodes under a three-tier HyperNode
//! tree (racks of 20, spines of 10 racks, zones of 5 spines), 50,000 pending
//! pods; the same workload with half its pods in gangs limited to one rack
//! or one spine, and with none limited, side by side in one run, with the
//! Wasm plugins and with native builds of the same crates. Prints time to
//! place, pods placed, the constrained / unconstrained ratio and the Wasm /
//! native ratio, and checks that no constrained gang crossed its limit.
//!
//!   cargo bench -p tephra --bench topology
//!   TEPHRA_BENCH_NODES=1000 cargo bench -p tephra --bench topology   # a smaller cluster

#[path = "support/harness.rs"]
mod harness;
#[path = "support/native.rs"]
mod native;

use harness::{pct, peak_rss_mib, run};
use std::collections::BTreeMap;
use tephra::config::SchedulerConfig;
use tephra::model::Cluster;
use tephra::scheduler::Library;
use tephra::synthetic::{add_topology, generate, Spec, CONFIG};
use tephra::topology::Tree;

/// Pods of constrained gangs placed outside their limit (must be none).
fn crossings(c: &Cluster, placed: &Cluster) -> usize {
    let nodes: Vec<_> = placed.nodes.iter().collect();
    let hns: Vec<_> = placed.hypernodes.values().cloned().collect();
    let tree = Tree::build(&hns, &nodes).unwrap();
    let index: BTreeMap<&str, u32> =
        placed.nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i as u32)).collect();
    let mut of_group: BTreeMap<(&str, &str), Vec<u32>> = BTreeMap::new();
    for p in placed.pods.iter() {
        if let (Some(g), Some(n)) = (p.group.as_deref(), p.node.as_deref()) {
            of_group.entry((p.namespace.as_str(), g)).or_default().push(tree.node_leaf[index[n] as usize]);
        }
    }
    let mut bad = 0;
    for g in c.podgroups.iter().filter(|g| g.network_topology.is_some()) {
        let limit = g.network_topology.as_ref().unwrap().highest_tier.unwrap();
        let leaves = of_group.get(&(g.namespace.as_str(), g.name.as_str())).cloned().unwrap_or_default();
        // The lowest HyperNode holding every placed pod of the gang.
        let chain = |h: u32| {
            let mut v = vec![h];
            while tree.parents[*v.last().unwrap() as usize] != u32::MAX {
                v.push(tree.parents[*v.last().unwrap() as usize]);
            }
            v
        };
        let Some(&first) = leaves.first() else { continue };
        let mut common = chain(first);
        for &l in &leaves[1..] {
            let up = chain(l);
            common.retain(|h| up.contains(h));
        }
        if common.first().is_some_and(|&h| tree.tiers[h as usize] > limit) {
            bad += leaves.len();
        }
    }
    bad
}

fn main() {
    let nodes: usize = std::env::var("TEPHRA_BENCH_NODES").ok().and_then(|v| v.parse().ok()).unwrap_or(5000);
    // The synthetic workloads' config, network-topology-aware beside the node scores.
    let config = format!("{}\n  - name: network-topology-aware\n", CONFIG.trim_end());
    let config = SchedulerConfig::parse(&config, "bench config").unwrap();
    let lib = Library::load(None).unwrap();
    let spec = Spec { nodes, pending_pods: nodes * 10, running_pods: 0, queues: 8, node_groups: 8, seed: 2 };
    let mut constrained = generate(&spec);
    add_topology(&mut constrained, 50);
    let mut free = constrained.clone();
    free.podgroups.iter_mut().for_each(|g| g.network_topology = None);
    let gangs = constrained.podgroups.iter().filter(|g| g.network_topology.is_some()).count();
    println!(
        "{nodes} nodes under {} HyperNodes, {} pending pods in {} jobs, {gangs} of them topology-constrained",
        constrained.hypernodes.len(),
        spec.pending_pods,
        constrained.podgroups.len()
    );
    println!(
        "{:<28} {:>7} {:>10} {:>10} {:>9}  per action (s)",
        "workload / plugins", "binds", "placed s", "pods/s", "p50 ms"
    );
    let mut best: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for round in 0..2 {
        for (label, cluster) in [("constrained", &constrained), ("unconstrained", &free)] {
            for (side, l) in [("wasm", Some(&lib)), ("native", None)] {
                let r = run(cluster, &config, l);
                let secs = r.placing.as_secs_f64();
                best.entry((label, side)).and_modify(|b| *b = b.min(secs)).or_insert(secs);
                let acts: Vec<String> = r.actions.iter().map(|(a, d)| format!("{a} {:.2}", d.as_secs_f64())).collect();
                println!(
                    "{:<28} {:>7} {:>10.2} {:>10.0} {:>9.1}  {}",
                    format!("{label} / {side} {}", round + 1),
                    r.binds,
                    secs,
                    r.binds as f64 / secs,
                    pct(&r.cycles, 0.5),
                    acts.join(", ")
                );
                if label == "constrained" {
                    assert_eq!(crossings(cluster, &r.placed), 0, "a constrained gang crossed its limit");
                }
            }
        }
    }
    for side in ["wasm", "native"] {
        let (c, f) = (best[&("constrained", side)], best[&("unconstrained", side)]);
        println!("{side}: constrained / unconstrained time to place: {:.2}x ({c:.2} s / {f:.2} s, best of 2)", c / f);
    }
    for label in ["constrained", "unconstrained"] {
        let (w, n) = (best[&(label, "wasm")], best[&(label, "native")]);
        println!("{label}: wasm / native time to place: {:.2}x ({w:.2} s / {n:.2} s)", w / n);
    }
    println!("peak RSS {:.0} MiB", peak_rss_mib());
}
