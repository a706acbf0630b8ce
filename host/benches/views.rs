//! The Rust SDK's named views against its column accessors, side by side on
//! one session: every node's idle cpu and GPUs, and every task's job's queue
//! weight, read both ways (native build; a guest runs the same code).
//! Run: `cargo bench -p tephra --bench views`.

use std::hint::black_box;
use std::time::Instant;
use tephra_sdk::{SnapshotBuilder, TaskStatus, NONE};

const NODES: usize = 5000;
const TASKS: usize = 50_000;
const ROUNDS: usize = 200;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut b = SnapshotBuilder::new(&["nvidia.com/gpu"]);
    for i in 0..NODES {
        b.node(&[64000.0, 256e9, 110.0, if i % 4 == 0 { 8000.0 } else { 0.0 }]);
    }
    let queues: Vec<u32> = (0..8).map(|q| b.queue(1.0 + q as f64)).collect();
    let mut job = 0;
    for t in 0..TASKS {
        if t % 10 == 0 {
            job = b.job(queues[t / 10 % queues.len()], 1);
        }
        let node = if t % 2 == 0 { (t % NODES) as u32 } else { NONE };
        let status = if node == NONE { TaskStatus::Pending } else { TaskStatus::Running };
        b.task(job, &[500.0, 1e9, 1.0, 0.0], status, node);
    }
    let s = b.build();
    let gpu = s.dim("nvidia.com/gpu").unwrap();
    let columns = || {
        let mut sum = 0.0;
        for n in 0..s.nodes() as u32 {
            sum += s.node_idle(n, 0) + s.node_idle(n, gpu);
        }
        for t in 0..s.tasks() as u32 {
            sum += s.snap.queue_weight[s.job_queue(s.task_job(t)) as usize];
        }
        sum
    };
    let views = || {
        let mut sum = 0.0;
        for n in 0..s.nodes() as u32 {
            let idle = s.node(n).idle();
            sum += idle.cpu() + idle.at(gpu);
        }
        for t in 0..s.tasks() as u32 {
            sum += s.task(t).job().queue().weight();
        }
        sum
    };
    assert_eq!(columns(), views(), "the two ways read different values");
    let (mut a, mut v) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t = Instant::now();
        black_box(columns());
        a.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        black_box(views());
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let (a, v) = (median(a), median(v));
    println!("{NODES} nodes, {TASKS} tasks; medians of {ROUNDS} rounds, alternating");
    println!("column accessors  {a:>9.1} µs");
    println!("named views       {v:>9.1} µs   views / columns {:.3}", v / a);
}
