//! Scheduling throughput on synthetic clusters, Wasm plugins vs the same
//! plugin crates compiled natively, through the same dispatcher, side by side
//! in one run. Prints per workload: pods placed per second, cycle latency
//! (p50/p99), session-open time, time per action and per plugin, peak RSS.
//!
//!   cargo bench -p tephra --bench schedule            # 1k nodes / 10k pending pods
//!   TEPHRA_BENCH_ALL=1 cargo bench -p tephra --bench schedule   # + 5k/50k and 10k/100k (50k running)
//!
//! `TEPHRA_BENCH_RULES=20` adds, beside every workload, the same workload
//! with 20 % of its pending pods under required pod anti-affinity or
//! topology spread (`synthetic::add_pod_rules`), and prints the ratio;
//! `TEPHRA_BENCH_DEVICES=10` the same workload with 10 % of its pending pods
//! claiming a GPU through DRA (`synthetic::add_device_claims`).
//! `TEPHRA_BENCH_ONLY=5k` keeps the workloads whose name contains "5k";
//! `TEPHRA_BENCH_PLUGINS=wasm` (or `native`) runs one side only (for profiling).
//! Each side runs `TEPHRA_BENCH_ROUNDS` times (default 2), the sides
//! alternating, and the ratio compares each side's best: the first run in a
//! process also pays for memory it touches first, which later runs reuse.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/native.rs"]
mod native;

use harness::{pct, peak_rss_mib, run};
use std::collections::BTreeMap;
use std::time::Duration;
use tephra::config::SchedulerConfig;
use tephra::scheduler::Library;
use tephra::synthetic::{add_device_claims, add_pod_rules, generate, Spec, CONFIG};

fn main() {
    let config = SchedulerConfig::parse(CONFIG, "bench config").unwrap();
    let lib = Library::load(None).unwrap();
    let mut workloads: Vec<(String, Spec, u32)> = vec![(
        "1k nodes / 10k pending".into(),
        Spec { nodes: 1000, pending_pods: 10_000, running_pods: 0, queues: 4, node_groups: 4, seed: 1 },
        0,
    )];
    if std::env::var_os("TEPHRA_BENCH_ALL").is_some() || std::env::var_os("TEPHRA_BENCH_ONLY").is_some() {
        workloads.push((
            "5k nodes / 50k pending".into(),
            Spec { nodes: 5000, pending_pods: 50_000, running_pods: 0, queues: 8, node_groups: 8, seed: 2 },
            0,
        ));
        workloads.push((
            "10k nodes / 100k pods, 50k running".into(),
            Spec { nodes: 10_000, pending_pods: 50_000, running_pods: 50_000, queues: 8, node_groups: 8, seed: 3 },
            0,
        ));
    }
    let only = std::env::var("TEPHRA_BENCH_ONLY").unwrap_or_default();
    workloads.retain(|(name, _, _)| name.starts_with(only.as_str()));
    if let Ok(pct) = std::env::var("TEPHRA_BENCH_RULES") {
        let pct: u32 = pct.parse().ok().filter(|p| (1..=100).contains(p)).expect("TEPHRA_BENCH_RULES: a percentage");
        workloads = workloads
            .into_iter()
            .flat_map(|(name, spec, _)| {
                let ruled = (format!("{name}, {pct} % with pod rules"), spec.clone(), pct);
                [(name, spec, 0), ruled]
            })
            .collect();
    }
    // TEPHRA_BENCH_DEVICES=10: the same with 10 % of the pending pods
    // claiming a GPU through DRA (encoded as a rules value above 100).
    if let Ok(pct) = std::env::var("TEPHRA_BENCH_DEVICES") {
        let pct: u32 = pct.parse().ok().filter(|p| (1..=100).contains(p)).expect("TEPHRA_BENCH_DEVICES: a percentage");
        workloads = workloads
            .into_iter()
            .flat_map(|(name, spec, rules)| {
                if rules > 0 {
                    return vec![(name, spec, rules)];
                }
                let claimed = (format!("{name}, {pct} % with DRA claims"), spec.clone(), 100 + pct);
                vec![(name, spec, 0), claimed]
            })
            .collect();
    }
    // Per workload without rules, each side's best time, for the ratio with rules.
    let mut plain_best: BTreeMap<String, f64> = BTreeMap::new();
    let sides = std::env::var("TEPHRA_BENCH_PLUGINS").unwrap_or_default();
    let rounds = match std::env::var("TEPHRA_BENCH_ROUNDS") {
        Ok(v) => v.parse::<usize>().ok().filter(|&n| n > 0).expect("TEPHRA_BENCH_ROUNDS: a whole number above 0"),
        Err(_) => 2,
    };
    for (name, spec, rules) in workloads {
        let mut cluster = generate(&spec);
        if rules > 100 {
            add_device_claims(&mut cluster, rules - 100);
        } else if rules > 0 {
            add_pod_rules(&mut cluster, rules);
        }
        println!(
            "\n{name}: {} nodes, {} pods ({} pending), {} jobs",
            cluster.nodes.len(),
            cluster.pods.len(),
            spec.pending_pods,
            cluster.podgroups.len()
        );
        println!(
            "{:<9} {:>6} {:>7} {:>9} {:>10} {:>9} {:>9} {:>9}  per action (s) / per plugin (s)",
            "plugins", "cycles", "binds", "placed s", "pods/s", "p50 ms", "p99 ms", "open ms"
        );
        let mut best: BTreeMap<&str, f64> = BTreeMap::new();
        let mut later_opens = Vec::new();
        let runs = (0..rounds).flat_map(|round| [("wasm", Some(&lib)), ("native", None)].map(|side| (round, side)));
        for (round, (label, l)) in runs {
            if !sides.is_empty() && sides != label {
                continue;
            }
            let r = run(&cluster, &config, l);
            let placing = r.placing.as_secs_f64();
            best.entry(label).and_modify(|b| *b = b.min(placing)).or_insert(placing);
            // The session opens of each side's last round.
            if round + 1 == rounds {
                later_opens.push((
                    label,
                    r.opens[1..].to_vec(),
                    r.idle_opens.clone(),
                    (r.second_plugins, r.second_open.clone()),
                ));
            }
            let acts: Vec<String> = r.actions.iter().map(|(a, d)| format!("{a} {:.2}", d.as_secs_f64())).collect();
            let mut plugs: Vec<(&String, &(f64, u64))> = r.plugins.iter().collect();
            plugs.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0));
            let plugs: Vec<String> =
                plugs.iter().take(8).map(|(p, (s, n))| format!("{p} {s:.2} ({}k calls)", n / 1000)).collect();
            let run_name = if rounds > 1 { format!("{label} {}", round + 1) } else { label.to_string() };
            println!(
                "{run_name:<9} {:>6} {:>7} {:>9.2} {:>10.0} {:>9.1} {:>9.1} {:>9.1}  {} / {}",
                r.cycles.len(),
                r.binds,
                r.placing.as_secs_f64(),
                r.binds as f64 / r.placing.as_secs_f64(),
                pct(&r.cycles, 0.5),
                pct(&r.cycles, 0.99),
                r.opens[0].as_secs_f64() * 1e3,
                acts.join(", "),
                plugs.join(", ")
            );
        }
        for (label, opens, idle, (plugins, second)) in &later_opens {
            let ms = |v: &[Duration]| v.iter().map(|d| format!("{:.1}", d.as_secs_f64() * 1e3)).collect::<Vec<_>>();
            println!(
                "{label}: session open: first (full build) in the table; later, from the last session: {} ms; \
                 then with nothing changed: {} ms",
                ms(opens).join(", "),
                ms(idle).join(", ")
            );
            let mut second = second.clone();
            second.sort_by_key(|p| std::cmp::Reverse(p.1));
            let parts: Vec<String> = second.iter().map(|(p, d)| format!("{p} {:.1}", d.as_secs_f64() * 1e3)).collect();
            if !parts.is_empty() {
                println!(
                    "{label}: of the second open, the plugins took {:.1} ms on two threads: {}",
                    plugins.as_secs_f64() * 1e3,
                    parts.join(", ")
                );
            }
        }
        if let (Some(wasm), Some(native)) = (best.get("wasm"), best.get("native")) {
            println!("wasm / native time to place: {:.2}x (best of {rounds} alternated runs each)", wasm / native);
        }
        for (side, secs) in &best {
            let plain = name.split(", ").next().unwrap_or_default();
            match plain_best.get(&format!("{plain} {side}")) {
                Some(base) if rules > 0 => println!(
                    "{side}: with {} / without: {:.2}x ({secs:.2} s / {base:.2} s to place)",
                    if rules > 100 { "DRA claims" } else { "pod rules" },
                    secs / base
                ),
                _ => {
                    plain_best.insert(format!("{name} {side}"), *secs);
                }
            }
        }
        println!("peak RSS so far {:.0} MiB", peak_rss_mib());
    }
}
