//! Relock time: one `reserve` action (candidates, the Wasm reservation
//! plugin's node choice, the cluster cap) on synthetic clusters with running
//! load, for a queue guarantee and for a big job. Session open is not
//! counted. Run: `cargo bench -p tephra --bench reservation`.

use std::time::{Duration, Instant};
use tephra::actions;
use tephra::config::{PluginConf, SchedulerConfig};
use tephra::model::{PodGroup, Queue};
use tephra::scheduler::{Library, Scheduler};
use tephra::synthetic::{generate, Spec};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let lib = Library::load(None).unwrap();
    let reserve = actions::by_name("reserve").unwrap();
    let elect = actions::by_name("elect").unwrap();
    println!("{:>6} {:>8} {:>16} {:>16} {:>8}", "nodes", "running", "queue relock", "big-job lock", "locked");
    for nodes in [500, 1000, 5000] {
        let spec = Spec { nodes, pending_pods: 0, running_pods: nodes * 5, queues: 4, node_groups: 1, seed: 7 };
        let mut cluster = generate(&spec);
        // A queue guaranteed 10 % of the cluster's cpu and memory.
        let total = |k: &str| cluster.nodes.iter().map(|n| n.allocatable.get(k).copied().unwrap_or(0.0)).sum::<f64>();
        let guarantee = [("cpu".to_string(), total("cpu") * 0.1), ("memory".to_string(), total("memory") * 0.1)];
        cluster.queues.push(Queue {
            name: "reserved".into(),
            weight: 1.0,
            reclaimable: true,
            guarantee: guarantee.into(),
            created: -1,
            ..Default::default()
        });
        // A big job (not admitted yet) needing 5 % of the cluster.
        cluster.podgroups.push(PodGroup {
            namespace: "ns".into(),
            name: "big".into(),
            queue: "queue-0".into(),
            min_member: 1,
            min_resources: Some([("cpu".to_string(), total("cpu") * 0.05)].into()),
            priority: Some(1000),
            ..Default::default()
        });
        let config = SchedulerConfig {
            actions: vec!["elect".into(), "reserve".into()],
            tiers: vec![vec![PluginConf::new("reservation")]],
            action_args: Default::default(),
            unset_is_on: true,
            limits: Default::default(),
        };
        let mut sched = Scheduler::new(config, &lib);
        let (mut queue_times, mut job_times) = (Vec::new(), Vec::new());
        let mut locked = 0;
        for _ in 0..7 {
            // A fresh scheduler state each run, so every run relocks.
            sched.reservations = Default::default();
            sched.inspect(&cluster, &Default::default(), 0, |ssn| {
                elect(ssn);
                let t = Instant::now();
                reserve(ssn);
                let all = t.elapsed();
                // The same action again with the queue not due: only the big job.
                let t = Instant::now();
                reserve(ssn);
                let job = t.elapsed();
                job_times.push(job);
                queue_times.push(all.saturating_sub(job));
                locked = ssn.snap.node_locked_queue.iter().filter(|&&q| q != u32::MAX).count();
                assert!(locked > 0, "the queue got no nodes: {:?}", ssn.job_reasons);
                assert!(ssn.snap.node_locked_job.iter().any(|&j| j != u32::MAX), "the big job got no nodes");
            });
        }
        println!(
            "{nodes:>6} {:>8} {:>13.2} ms {:>13.2} ms {locked:>8}",
            spec.running_pods,
            median(queue_times).as_secs_f64() * 1e3,
            median(job_times).as_secs_f64() * 1e3
        );
    }
}
