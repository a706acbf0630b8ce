//! Reservations end to end: the examples' waits with and without the plugin,
//! locks released when the target goes away, reservations switched on and
//! off at run time through the queue and the config, and relock timing.

use std::path::Path;
use std::process::Command;
use tephra::config::SchedulerConfig;
use tephra::manifest;
use tephra::scheduler::{Library, Scheduler};
use tephra::simulate::{Options, Simulation};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// `tephra simulate FILE --config CONF`; returns stdout.
fn simulate(file: &str, conf: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tephra"))
        .args(["simulate", file, "--config", conf, "--cycles", "80"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into()
}

/// Seconds `job` waited, from the simulator's waits table.
fn wait_of(out: &str, job: &str) -> f64 {
    let line = out
        .split("waits (arrival → first running):")
        .nth(1)
        .and_then(|t| t.lines().find(|l| l.split_whitespace().next() == Some(job)))
        .unwrap_or_else(|| panic!("{job} never ran:\n{out}"));
    line.split_whitespace().nth(1).unwrap().trim_end_matches('s').parse().unwrap()
}

#[test]
fn big_job_starves_without_reservation_and_starts_with_it() {
    let with = simulate("examples/reservation/big-job.yaml", "examples/reservation/big-job.conf");
    let without = simulate("examples/reservation/big-job.yaml", "examples/reservation/big-job-plain.conf");
    let (w, wo) = (wait_of(&with, "team/big"), wait_of(&without, "team/big"));
    eprintln!("team/big waited {w}s with reservation, {wo}s without");
    // The stream runs until t=40: without a reservation big starts only after it.
    assert!(wo >= 38.0, "{without}");
    // With it: elected on arrival, two nodes drain within one small job's run (4 s).
    assert!(w <= 6.0, "{with}");
    assert!(with.contains("reserved   job team/big: "), "{with}");
    assert!(!without.contains("reserved"), "{without}");
}

#[test]
fn queue_guarantee_is_honoured_on_locked_nodes() {
    let with = simulate("examples/reservation/queue.yaml", "examples/reservation/queue.conf");
    let without = simulate("examples/reservation/queue.yaml", "examples/reservation/queue-plain.conf");
    let (w, wo) = (wait_of(&with, "web/api"), wait_of(&without, "web/api"));
    eprintln!("web/api waited {w}s with reservation, {wo}s without");
    assert!(w <= 1.0, "{with}");
    assert!(wo >= 10.0, "{without}");
    // status.reservation: the tightest cover, with its idle total.
    assert!(with.contains("reserved   queue serving: n1, n2 (idle cpu 16, memory 64Gi)"), "{with}");
    // batch fills the rest and never lands on the reserved nodes.
    for line in with.lines().filter(|l| l.contains("bind       etl/")) {
        assert!(!line.ends_with(" n1") && !line.ends_with(" n2"), "{line}");
    }
    assert!(with.contains("node reserved for queue serving (reservation)"), "{with}");
}

fn sim_of(yaml: &str, conf: &str) -> Simulation {
    let objects = manifest::parse(yaml, "inline").unwrap();
    let config = SchedulerConfig::parse(conf, "inline").unwrap();
    let lib = Library::load(None).unwrap();
    Simulation::new(
        objects,
        Scheduler::new(config, &lib),
        Options { max_cycles: 100, period: 1.0, ..Default::default() },
    )
}

const NODES: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n3}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"#;

const CONF: &str = r#"
actions: "enqueue, elect, reserve, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: reservation, arguments: {maxReservedFraction: 0.7}}]
- plugins: [{name: predicates}]
configurations:
- name: reserve
  arguments: {relockPeriod: 5s}
"#;

fn locked_for_queue(sim: &Simulation, queue: &str) -> Vec<String> {
    sim.scheduler.reservations.queues.get(queue).map(|l| l.nodes.clone()).unwrap_or_default()
}

#[test]
fn queue_reservation_is_switched_by_the_queue_and_the_config() {
    let queue = r#"
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
spec: {weight: 1, guarantee: {resource: {cpu: "4"}}}
"#;
    let mut sim = sim_of(&format!("{NODES}{queue}"), CONF);
    sim.step();
    assert_eq!(locked_for_queue(&sim, "q1").len(), 1);
    let first_relock = sim.scheduler.reservations.queues["q1"].relocked_ms;
    // Nothing changes: the same node stays locked and no relock happens
    // before the 5 s period.
    for _ in 0..3 {
        let before = locked_for_queue(&sim, "q1");
        sim.step();
        assert_eq!(locked_for_queue(&sim, "q1"), before);
        assert_eq!(sim.scheduler.reservations.queues["q1"].relocked_ms, first_relock);
    }
    sim.step();
    sim.step();
    assert_eq!(sim.scheduler.reservations.queues["q1"].relocked_ms, first_relock + 5_000);
    // A bigger guarantee relocks at once, without waiting for the period.
    let q = sim.cluster.queues.iter_mut().find(|q| q.name == "q1").unwrap();
    q.guarantee.insert("cpu".into(), 8000.0);
    sim.step();
    assert_eq!(locked_for_queue(&sim, "q1").len(), 2);
    // Removing the guarantee frees the nodes.
    let q = sim.cluster.queues.iter_mut().find(|q| q.name == "q1").unwrap();
    q.guarantee.clear();
    sim.step();
    assert!(!sim.scheduler.reservations.queues.contains_key("q1"));
    // Back on, then the config drops the reserve action: nothing stays locked.
    let q = sim.cluster.queues.iter_mut().find(|q| q.name == "q1").unwrap();
    q.guarantee.insert("cpu".into(), 4000.0);
    sim.step();
    assert_eq!(locked_for_queue(&sim, "q1").len(), 1);
    let plain = SchedulerConfig::parse("actions: \"enqueue, allocate\"\ntiers:\n- plugins: [{name: gang}]\n", "plain");
    sim.scheduler.set_config(plain.unwrap());
    sim.step();
    assert_eq!(sim.scheduler.reservations, Default::default());
}

#[test]
fn deleting_the_target_releases_its_nodes() {
    let jobs = r#"
---
apiVersion: v1
kind: Pod
metadata: {name: busy-1, namespace: ns, annotations: {tephra.io/duration: "100"}}
spec: {schedulerName: volcano, nodeName: n1, containers: [{name: c, image: x, resources: {requests: {cpu: "4"}}}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: busy-2, namespace: ns, annotations: {tephra.io/duration: "100"}}
spec: {schedulerName: volcano, nodeName: n2, containers: [{name: c, image: x, resources: {requests: {cpu: "4"}}}]}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: busy-3, namespace: ns, annotations: {tephra.io/duration: "100"}}
spec: {schedulerName: volcano, nodeName: n3, containers: [{name: c, image: x, resources: {requests: {cpu: "4"}}}]}
status: {phase: Running}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: big, namespace: ns}
spec:
  minAvailable: 2
  tasks:
  - name: w
    replicas: 2
    template:
      spec:
        containers: [{name: w, image: x, resources: {requests: {cpu: "4"}}}]
"#;
    let mut sim = sim_of(&format!("{NODES}{jobs}"), CONF);
    sim.step();
    sim.step();
    let targets = &sim.scheduler.reservations.targets;
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert_eq!(targets[0].0, "ns/big");
    assert_eq!(targets[0].1.len(), 2, "two 4-cpu nodes for 2 x 4 cpu: {targets:?}");
    sim.cluster.podgroups.retain(|g| g.name != "big");
    sim.cluster.pods.retain(|p| p.group.as_deref() != Some("big"));
    sim.step();
    assert!(sim.scheduler.reservations.targets.is_empty(), "{:?}", sim.scheduler.reservations);
}
