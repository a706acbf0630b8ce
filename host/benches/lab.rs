//! The policy lab at scale: a generated one-week trace of 100,000 jobs
//! (four queues; most jobs one pod and short, a tail of gangs up to 32 pods
//! and runs up to 12 hours) replayed on 5,000 nodes with Volcano's usual
//! plugins and actions, preempt and reclaim included (every plugin a Wasm
//! component), at a 60 s and a 300 s scheduling period side by side. Prints
//! the wall time, cycles, simulated seconds per wall second, jobs per
//! second and the mean cpu in use, and checks that every job completed.
//!
//!   cargo bench -p tephra --bench lab
//!   TEPHRA_BENCH_JOBS=20000 TEPHRA_BENCH_PERIODS=60 cargo bench -p tephra --bench lab

use std::time::Instant;
use tephra::config::SchedulerConfig;
use tephra::lab::{self, Variant};
use tephra::manifest;
use tephra::simulate::Options;
use tephra::trace::{self, generate};

/// The allocator the `tephra` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Volcano's usual set, with eviction: every plugin a Wasm component.
const CONFIG: &str = "actions: \"enqueue, allocate, backfill, preempt, reclaim\"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
";

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.into())
}

fn main() {
    let jobs: usize = env("TEPHRA_BENCH_JOBS", "100000").parse().expect("TEPHRA_BENCH_JOBS");
    let nodes: usize = env("TEPHRA_BENCH_NODES", "5000").parse().expect("TEPHRA_BENCH_NODES");
    let periods: Vec<f64> = env("TEPHRA_BENCH_PERIODS", "60,300")
        .split(',')
        .map(|p| p.trim().parse().expect("TEPHRA_BENCH_PERIODS"))
        .collect();
    let queues: Vec<String> = ["default", "research", "prod", "batch"].map(String::from).to_vec();
    let shape = generate::Shape {
        jobs,
        span: 7.0 * 86400.0,
        queues: queues.clone(),
        seed: 1,
        gpu_jobs: 0.0,
        limit_factor: None,
    };
    let mut cluster = format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: node, annotations: {{tephra.io/replicas: \"{nodes}\"}}}}\n\
         status: {{allocatable: {{cpu: \"8\", memory: 32Gi, pods: \"110\"}}}}\n"
    );
    for (q, w) in queues.iter().zip([1, 2, 4, 1]) {
        cluster += &format!(
            "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {q}}}\n\
             spec: {{weight: {w}, reclaimable: true}}\n"
        );
    }
    let mut workload = manifest::parse(&cluster, "<bench cluster>").unwrap();
    workload.extend(trace::objects(&generate::generate(&shape)).unwrap());
    let config = SchedulerConfig::parse(CONFIG, "<bench config>").unwrap();
    let variant = Variant::base(config);
    println!(
        "lab replay: {jobs} jobs over 7 days on {nodes} nodes (8 cpu each); enqueue, allocate, backfill, \
         preempt, reclaim with 9 Wasm plugins; mimalloc as in the binary; {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    for period in periods {
        let options = Options { max_cycles: usize::MAX, period, skip_idle: true, ..Default::default() };
        let t = Instant::now();
        let s = lab::run(&variant, &workload, None, options, &mut |_, _, _| {}).unwrap();
        let wall = t.elapsed().as_secs_f64();
        assert_eq!((s.overall.jobs, s.overall.finished), (jobs, jobs), "every job completes");
        println!(
            "period {period:>4}s: {wall:6.1} s wall, {} cycles, {:.0} simulated s per wall s, {:.0} jobs/s, \
             wait p50 {} p99 {}, mean cpu in use {:.0}%",
            s.cycles,
            s.simulated / wall,
            jobs as f64 / wall,
            lab::seconds(s.overall.p50),
            lab::seconds(s.overall.p99),
            s.mean_utilisation.get("cpu").copied().unwrap_or(0.0) * 100.0
        );
    }
}
