//! Swap latency: how long until a new plugin version is live, from a `.wasm`
//! never seen (compile), from the on-disk compiled cache (a restart), and
//! from the in-memory cache (a repeated swap). Each figure includes the dry
//! run on a session snapshot of a 1,000-node cluster. Run: `cargo bench -p tephra --bench swap`.

use std::path::Path;
use std::time::{Duration, Instant};
use tephra::config::{PluginConf, SchedulerConfig};
use tephra::model::Cluster;
use tephra::scheduler::{Library, Scheduler};
use tephra::wasm::builtin::FIXTURES_DIR;
use tephra::wasm::Sandbox;

fn cluster(nodes: usize) -> Cluster {
    tephra::synthetic::small(nodes, 32000.0, 1, 1000.0, 1)
}

fn scheduler(sandbox: Sandbox) -> Scheduler {
    let config = SchedulerConfig {
        actions: vec!["allocate".into()],
        tiers: vec![vec![PluginConf::new("gang")], vec![PluginConf::new("predicates"), PluginConf::new("prefer")]],
        action_args: Default::default(),
        unset_is_on: true,
        limits: Default::default(),
    };
    let lib = Library::load_with(None, sandbox).unwrap();
    let mut s = Scheduler::new(config, &lib);
    s.cycle(&cluster(1000), &Default::default(), 0);
    s
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let bytes = std::fs::read(Path::new(FIXTURES_DIR).join("swap/prefer-last.wasm")).unwrap();
    let cache = std::env::temp_dir().join(format!("tephra-bench-cache-{}", std::process::id()));
    let runs = 15;
    // Compile every time: no disk cache, a new runtime (empty memory cache) per run.
    let mut cold = Vec::new();
    for _ in 0..runs {
        let mut s = scheduler(Sandbox { cache_dir: None, ..Default::default() });
        let t = Instant::now();
        s.swap(&bytes, "prefer-last.wasm").unwrap();
        cold.push(t.elapsed());
    }
    // A restart: new runtime, compiled code found in the disk cache.
    let disk = Sandbox { cache_dir: Some(cache.clone()), ..Default::default() };
    scheduler(disk.clone()).swap(&bytes, "warm-up").unwrap();
    let mut from_disk = Vec::new();
    for _ in 0..runs {
        let mut s = scheduler(disk.clone());
        let t = Instant::now();
        s.swap(&bytes, "prefer-last.wasm").unwrap();
        from_disk.push(t.elapsed());
    }
    // A repeated swap in the same process.
    let mut s = scheduler(Sandbox { cache_dir: None, ..Default::default() });
    s.swap(&bytes, "warm-up").unwrap();
    let mut repeated = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        s.swap(&bytes, "prefer-last.wasm").unwrap();
        repeated.push(t.elapsed());
    }
    let _ = std::fs::remove_dir_all(&cache);
    let (c, d, r) = (median(cold), median(from_disk), median(repeated));
    println!("swap latency, median of {runs} (dry run on a 1,000-node snapshot included):");
    println!("  from .wasm, compiled:        {:>8.2} ms", c.as_secs_f64() * 1e3);
    println!(
        "  from the disk cache:         {:>8.2} ms  ({:.1}x faster)",
        d.as_secs_f64() * 1e3,
        c.as_secs_f64() / d.as_secs_f64()
    );
    println!(
        "  from the in-memory cache:    {:>8.2} ms  ({:.1}x faster)",
        r.as_secs_f64() * 1e3,
        c.as_secs_f64() / r.as_secs_f64()
    );
}
