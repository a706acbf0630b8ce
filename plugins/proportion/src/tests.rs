use super::*;
use tephra_sdk::{Runtime, SnapshotBuilder, NONE};

const GI: f64 = 1_073_741_824.0;
const CPU: u32 = 0;
const MEM: u32 = 1;

fn qty(owner: u32, dim: u32, value: f64) -> Quantity {
    Quantity { owner, dim, value }
}

fn min_resources(b: &mut SnapshotBuilder, j: u32, row: &[f64]) {
    b.snap.job_has_min_resources[j as usize] = true;
    for (d, &v) in row.iter().enumerate() {
        b.snap.job_min_resources.push(qty(j, d as u32, v));
    }
}

fn open(b: SnapshotBuilder) -> (Proportion, Session) {
    let s = b.build();
    let mut p = Proportion::default();
    p.open(&s, &Args::default()).unwrap();
    (p, s)
}

fn deserved(p: &Proportion, q: u32) -> &[f64] {
    &p.attr(q).unwrap().deserved
}

/// Reference §10 check 1 (website example): 4 CPU, `default` (w=1) runs 1 + 3
/// CPU, `test` (w=3) waits for 3 CPU.
#[test]
fn website_example_reclaims_the_big_task_only() {
    let mut b = SnapshotBuilder::new(&[]);
    let n = b.node(&[4000.0, 8.0 * GI, 110.0]);
    let (default, test) = (b.queue(1.0), b.queue(3.0));
    let (job1, job2, job3) = (b.job(default, 1), b.job(default, 1), b.job(test, 1));
    b.snap.job_phase[job1 as usize] = JobPhase::Running;
    b.snap.job_phase[job2 as usize] = JobPhase::Running;
    min_resources(&mut b, job1, &[1000.0]);
    min_resources(&mut b, job2, &[3000.0]);
    min_resources(&mut b, job3, &[3000.0]);
    let t1 = b.task(job1, &[1000.0], TaskStatus::Running, n);
    let t2 = b.task(job2, &[3000.0], TaskStatus::Running, n);
    let t3 = b.task(job3, &[3000.0], TaskStatus::Pending, NONE);
    let (mut p, s) = open(b);

    // Round 1 (W=4): default min(1, request 4) = 1 CPU, test 3 CPU (met).
    assert_eq!(deserved(&p, default), [1000.0, 0.0, 2.0]);
    assert_eq!(deserved(&p, test), [3000.0, 0.0, 1.0]);
    assert_eq!(p.attr(default).unwrap().share, 4.0);
    assert_eq!(p.attr(test).unwrap().inqueue, [3000.0, 0.0, 0.0]);
    assert!(p.overused(&s, default));
    assert!(!p.overused(&s, test));
    assert!(p.queue_order(&s, test) < p.queue_order(&s, default));
    assert!(p.preemptive(&s, test, t3));
    // Only requested dims count, pods never: default is over on cpu and pods.
    let default_attr = p.attr(default).unwrap();
    assert!(default_attr.fits(&[0.0, 0.0, 1.0]));
    assert!(!default_attr.fits(&[1.0, 0.0, 0.0]));
    // Once job2 is gone default holds exactly its deserved: job1 stays.
    assert_eq!(p.reclaimable(&s, t3, &[t2, t1]), (vec![t2], Vote::Permit));
    assert_eq!(p.reclaimable(&s, t3, &[t1, t2]), (vec![t1, t2], Vote::Permit));
}

/// Reference §10 check 3: two w=1 queues on one 2-CPU node, 2×1 CPU each.
#[test]
fn two_queues_get_one_cpu_each_and_events_move_allocated() {
    let mut b = SnapshotBuilder::new(&[]);
    let n = b.node(&[2000.0, 4.0 * GI, 10.0]);
    let (q1, q2) = (b.queue(1.0), b.queue(1.0));
    let (j1, j2) = (b.job(q1, 1), b.job(q2, 1));
    let t = [j1, j1, j2, j2].map(|j| b.task(j, &[1000.0, 1e9], TaskStatus::Pending, NONE));
    let mut rt = Runtime::<Proportion>::default();
    rt.open_session(b.snap, vec![]).unwrap();

    assert_eq!(deserved(&rt.plugin, q1), [1000.0, 2e9, 2.0]);
    assert_eq!(deserved(&rt.plugin, q2), [1000.0, 2e9, 2.0]);
    assert!(rt.allocatable(q1, t[0]));
    let event = |kind, task, node, status| Event { kind, task, node, status };
    rt.on_events(&[event(EventKind::Allocate, t[0], n, TaskStatus::Allocated)]);
    assert!(!rt.allocatable(q1, t[1]));
    assert!(rt.allocatable(q2, t[2]));
    assert_eq!(rt.plugin.attr(q1).unwrap().share, 1.0);
    let keys = rt.queue_order(&[q1, q2]);
    assert!(keys[1] < keys[0]);
    // A pipelined task counts like an allocated one.
    rt.on_events(&[event(EventKind::Allocate, t[2], n, TaskStatus::Pipelined)]);
    assert!(!rt.allocatable(q2, t[3]));
    rt.on_events(&[event(EventKind::Deallocate, t[0], NONE, TaskStatus::Pending)]);
    assert!(rt.allocatable(q1, t[1]));
    assert_eq!(rt.plugin.attr(q1).unwrap().share, 0.0);
}

/// Reference §10 check 4: a guarantee of the whole cluster leaves other
/// queues a real capability of 0, even when its own queue has no job.
#[test]
fn guarantee_of_jobless_queue_blocks_enqueue_elsewhere() {
    let mut b = SnapshotBuilder::new(&[]);
    b.node(&[2000.0, 4.0 * GI, 10.0]);
    let (q1, q2) = (b.queue(1.0), b.queue(1.0));
    b.snap.queue_guarantee.push(qty(q1, CPU, 2000.0));
    let (gated, free) = (b.job(q2, 1), b.job(q2, 1));
    b.snap.job_phase[gated as usize] = JobPhase::Pending;
    b.snap.job_phase[free as usize] = JobPhase::Pending;
    min_resources(&mut b, gated, &[1000.0]);
    let (mut p, s) = open(b);

    assert!(p.attr(q1).is_none());
    assert!(p.queue_status(&s, q1).0.iter().all(|x| x.is_nan()));
    assert_eq!(p.queue_status(&s, q2), (vec![0.0, 0.0, 0.0], 0.0));
    assert_eq!(p.attr(q2).unwrap().real_capability, [0.0, 4.0 * GI, 10.0]);
    assert_eq!(p.job_enqueueable(&s, gated), Vote::Reject);
    assert_eq!(p.job_enqueueable(&s, free), Vote::Permit);
}

#[test]
fn guarantee_floors_deserved_and_shrinks_others_real_capability() {
    let mut b = SnapshotBuilder::new(&[]);
    b.node(&[4000.0, 8.0 * GI, 110.0]);
    let (qa, qb) = (b.queue(1.0), b.queue(3.0));
    b.snap.queue_guarantee.push(qty(qa, CPU, 3000.0));
    let (ja, jb) = (b.job(qa, 1), b.job(qb, 1));
    let ta = b.task(ja, &[1000.0], TaskStatus::Pending, NONE);
    let tb: Vec<u32> = (0..8).map(|_| b.task(jb, &[1000.0], TaskStatus::Pending, NONE)).collect();
    let (mut p, s) = open(b);

    assert_eq!(p.attr(qa).unwrap().real_capability, [4000.0, 8.0 * GI, 110.0]);
    assert_eq!(p.attr(qb).unwrap().real_capability, [1000.0, 8.0 * GI, 110.0]);
    // Round 1 (W=4): qa gets 1 CPU (its request), floored to its 3 CPU
    // guarantee; qb gets 3 CPU, capped at its real capability of 1 CPU.
    assert_eq!(deserved(&p, qa), [3000.0, 0.0, 1.0]);
    assert_eq!(deserved(&p, qb), [1000.0, 0.0, 8.0]);
    assert!(p.allocatable(&s, qa, ta));
    assert!(p.attr(qa).unwrap().fits(&[3000.0, 0.0, 1.0]));
    assert!(p.allocatable(&s, qb, tb[0]));
}

#[test]
fn capability_and_request_cap_water_filling() {
    let mut b = SnapshotBuilder::new(&[]);
    b.node(&[9000.0, 0.0, 110.0]);
    let (q1, q2, q3) = (b.queue(1.0), b.queue(1.0), b.queue(1.0));
    b.snap.queue_capability.push(qty(q2, CPU, 2000.0));
    // cpu/memory ≤ 0 means unlimited.
    b.snap.queue_capability.push(qty(q3, CPU, 0.0));
    let jobs = [q1, q2, q3].map(|q| b.job(q, 1));
    b.task(jobs[0], &[1000.0], TaskStatus::Pending, NONE);
    for _ in 0..10 {
        b.task(jobs[1], &[1000.0], TaskStatus::Pending, NONE);
        b.task(jobs[2], &[1000.0], TaskStatus::Pending, NONE);
    }
    let (p, _) = open(b);

    assert_eq!(p.attr(q2).unwrap().real_capability[0], 2000.0);
    assert_eq!(p.attr(q3).unwrap().real_capability[0], 9000.0);
    assert_eq!(deserved(&p, q1)[..1], [1000.0]);
    assert_eq!(deserved(&p, q2)[..1], [2000.0]);
    assert_eq!(deserved(&p, q3)[..1], [6000.0]);
}

#[test]
fn all_zero_weights_leave_deserved_zero() {
    let mut b = SnapshotBuilder::new(&[]);
    let n = b.node(&[4000.0, 4.0 * GI, 10.0]);
    let q = b.queue(0.0);
    b.snap.queue_guarantee.push(qty(q, CPU, 1000.0));
    let j = b.job(q, 1);
    let running = b.task(j, &[500.0], TaskStatus::Running, n);
    let pending = b.task(j, &[500.0], TaskStatus::Pending, NONE);
    let (mut p, s) = open(b);

    // The guarantee is applied only inside the loop, which never runs.
    assert_eq!(deserved(&p, q), [0.0, 0.0, 0.0]);
    assert_eq!(p.attr(q).unwrap().share, 0.0);
    assert!(p.overused(&s, q));
    assert!(!p.allocatable(&s, q, pending));
    assert_eq!(p.reclaimable(&s, pending, &[running]), (vec![running], Vote::Permit));
}

/// Volcano's proportion_test.go TestEnqueueAndAllocable fixture: q1 (cap 2
/// CPU, 2G) runs pod1 (1 CPU, 2G); q2 runs pod2; a third job waits in q1.
fn enqueue_fixture(third: &[f64]) -> (Proportion, Session, u32, u32, u32) {
    let mut b = SnapshotBuilder::new(&[]);
    let n1 = b.node(&[2000.0, 2e9, 10.0]);
    let n2 = b.node(&[2000.0, 2e9, 10.0]);
    let (q1, q2) = (b.queue(1.0), b.queue(1.0));
    b.snap.queue_capability.extend([qty(q1, CPU, 2000.0), qty(q1, MEM, 2e9)]);
    b.snap.queue_capability.extend([qty(q2, CPU, 3000.0), qty(q2, MEM, 3e9)]);
    for (q, n, req) in [(q1, n1, [1000.0, 2e9]), (q2, n2, [2000.0, 1e9])] {
        let j = b.job(q, 1);
        b.snap.job_phase[j as usize] = JobPhase::Running;
        min_resources(&mut b, j, &req);
        b.task(j, &req, TaskStatus::Running, n);
    }
    let j3 = b.job(q1, 1);
    b.snap.job_phase[j3 as usize] = JobPhase::Pending;
    min_resources(&mut b, j3, third);
    let t3 = b.task(j3, third, TaskStatus::Pending, NONE);
    let (p, s) = open(b);
    (p, s, q1, j3, t3)
}

#[test]
fn cpu_only_job_passes_although_memory_is_used_up() {
    let (mut p, s, q1, j3, t3) = enqueue_fixture(&[1000.0, 0.0]);
    assert_eq!(deserved(&p, q1), [2000.0, 2e9, 2.0]);
    assert_eq!(p.job_enqueueable(&s, j3), Vote::Permit);
    assert!(p.allocatable(&s, q1, t3));
}

#[test]
fn job_over_real_capability_is_rejected_and_task_over_deserved_refused() {
    let (mut p, s, q1, j3, t3) = enqueue_fixture(&[1000.0, 1e9]);
    // Memory request 3G is capped by realCapability 2G.
    assert_eq!(deserved(&p, q1), [2000.0, 2e9, 2.0]);
    // 1G + allocated 2G + inqueue 0 − elastic 0 > 2G.
    assert_eq!(p.job_enqueueable(&s, j3), Vote::Reject);
    assert!(!p.allocatable(&s, q1, t3));
    assert!(!p.overused(&s, q1));
}

#[test]
fn closed_queue_refuses_everything() {
    let (mut p, mut s, q1, j3, t3) = enqueue_fixture(&[1000.0, 0.0]);
    s.snap.queue_state[q1 as usize] = QueueState::Closed;
    assert_eq!(p.job_enqueueable(&s, j3), Vote::Reject);
    assert!(!p.allocatable(&s, q1, t3));
    assert!(!p.preemptive(&s, q1, t3));
}

#[test]
fn only_enqueued_jobs_reserve_inqueue() {
    let mut b = SnapshotBuilder::new(&[]);
    b.node(&[4000.0, 4e9, 10.0]);
    let q = b.queue(1.0);
    b.snap.queue_capability.extend([qty(q, CPU, 1000.0), qty(q, MEM, 4e9)]);
    let (ja, jb) = (b.job(q, 1), b.job(q, 1));
    for j in [ja, jb] {
        b.snap.job_phase[j as usize] = JobPhase::Pending;
        min_resources(&mut b, j, &[1000.0, 1e9]);
        b.task(j, &[1000.0, 1e9], TaskStatus::Pending, NONE);
    }
    let (mut p, s) = open(b);

    assert_eq!(p.job_enqueueable(&s, ja), Vote::Permit);
    // ja was rejected by another plugin: JobEnqueued is never called for it.
    assert_eq!(p.job_enqueueable(&s, jb), Vote::Permit);
    p.job_enqueued(&s, jb);
    assert_eq!(p.attr(q).unwrap().inqueue, [1000.0, 1e9, 0.0]);
    assert_eq!(p.job_enqueueable(&s, ja), Vote::Reject);
}

#[test]
fn inqueue_and_elastic_at_open_feed_the_enqueue_check() {
    let mut b = SnapshotBuilder::new(&[]);
    let n = b.node(&[6000.0, 4e9, 20.0]);
    let q = b.queue(1.0);
    let phases = [JobPhase::Running, JobPhase::Inqueue, JobPhase::Running, JobPhase::Running];
    let [short, admitted, whole, plain] = phases.map(|ph| {
        let j = b.job(q, 1);
        b.snap.job_phase[j as usize] = ph;
        j
    });
    b.snap.job_min_available[short as usize] = 2;
    // Running below its gang: reserves nothing more.
    min_resources(&mut b, short, &[2000.0]);
    b.task(short, &[1000.0], TaskStatus::Running, n);
    // Inqueue with one task placed: reserves the other 2 CPU.
    min_resources(&mut b, admitted, &[3000.0]);
    b.task(admitted, &[1000.0], TaskStatus::Allocated, n);
    // Running beyond its minimum: 1 CPU elastic.
    min_resources(&mut b, whole, &[1000.0]);
    b.task(whole, &[1000.0], TaskStatus::Running, n);
    b.task(whole, &[1000.0], TaskStatus::Bound, n);
    // No minResources: everything it holds is elastic.
    b.task(plain, &[500.0], TaskStatus::Running, n);
    let (fits, over) = (b.job(q, 1), b.job(q, 1));
    for (j, cpu) in [(fits, 1000.0), (over, 1001.0)] {
        b.snap.job_phase[j as usize] = JobPhase::Pending;
        min_resources(&mut b, j, &[cpu]);
    }
    let (mut p, s) = open(b);

    let a = p.attr(q).unwrap();
    assert_eq!(a.allocated, [4500.0, 0.0, 5.0]);
    assert_eq!(a.inqueue, [2000.0, 0.0, 0.0]);
    assert_eq!(a.elastic, [1500.0, 0.0, 5.0]);
    // 1000 + 4500 + 2000 − 1500 = 6000 ≤ 6000.
    assert_eq!(p.job_enqueueable(&s, fits), Vote::Permit);
    assert_eq!(p.job_enqueueable(&s, over), Vote::Reject);
}

/// Volcano's reclaim_test.go "node available resources should be included":
/// memory weights 1/1/3 over 2Gi.
#[test]
fn overused_queues_both_yield_and_priority_orders_them() {
    let mut b = SnapshotBuilder::new(&[]);
    let n = b.node(&[10_000.0, 2.0 * GI, 10.0]);
    let (q1, q2, q3) = (b.queue(1.0), b.queue(1.0), b.queue(3.0));
    b.snap.queue_priority[q1 as usize] = 1;
    b.snap.queue_priority[q2 as usize] = 2;
    let [j1, j2, j3] = [q1, q2, q3].map(|q| b.job(q, 1));
    let v1 = b.task(j1, &[1000.0, 1e9], TaskStatus::Running, n);
    let v2 = b.task(j2, &[1000.0, 1e9], TaskStatus::Running, n);
    let t = b.task(j3, &[2000.0, 1e9], TaskStatus::Pending, NONE);
    let (mut p, s) = open(b);

    assert_eq!(deserved(&p, q3), [2000.0, 1e9, 1.0]);
    for q in [q1, q2] {
        let d = deserved(&p, q);
        assert_eq!((d[0], d[2]), (1000.0, 1.0));
        assert!((d[1] - 573_741_824.0).abs() < 1e-3, "{}", d[1]);
        assert!(p.overused(&s, q));
    }
    assert!(p.preemptive(&s, q3, t));
    assert_eq!(p.reclaimable(&s, t, &[v1, v2]), (vec![v1, v2], Vote::Permit));
    let key = |p: &mut Proportion, q| p.queue_order(&s, q);
    assert!(key(&mut p, q2) < key(&mut p, q1));
    assert!(key(&mut p, q1) < key(&mut p, q3));
}

#[test]
fn queue_in_deserved_is_not_reclaimed() {
    let (mut p, s, _, _, t3) = enqueue_fixture(&[1000.0, 0.0]);
    let running: Vec<u32> = (0..s.tasks() as u32).filter(|&t| s.task_status(t) == TaskStatus::Running).collect();
    let (victims, vote) = p.reclaimable(&s, t3, &running);
    assert!(victims.is_empty());
    assert_eq!(vote, Vote::Permit);
}

/// [quirk] A scalar fully taken by guarantees is absent from other queues'
/// realCapability: enqueue sees 0, water-filling sees no ceiling.
#[test]
fn scalar_reserved_by_guarantees_is_uncapped_in_water_filling() {
    let mut b = SnapshotBuilder::new(&["nvidia.com/gpu"]);
    b.node(&[8000.0, 8.0 * GI, 10.0, 2000.0]);
    let (q1, q2) = (b.queue(1.0), b.queue(1.0));
    b.snap.queue_guarantee.push(qty(q1, 3, 2000.0));
    let j = b.job(q2, 1);
    b.snap.job_phase[j as usize] = JobPhase::Pending;
    min_resources(&mut b, j, &[1000.0, 0.0, 0.0, 1000.0]);
    b.task(j, &[1000.0, 0.0, 0.0, 1000.0], TaskStatus::Pending, NONE);
    let (mut p, s) = open(b);

    assert_eq!(p.attr(q2).unwrap().real_capability[3], 0.0);
    assert_eq!(deserved(&p, q2), [1000.0, 0.0, 1.0, 1000.0]);
    assert_eq!(p.job_enqueueable(&s, j), Vote::Reject);
}

#[test]
fn order_key_puts_priority_before_share() {
    let shares = [0.0, 1e-9, 0.25, 1.0, 4.0, 1e12, f64::INFINITY];
    for p in [i32::MIN + 1, -7, 0, 5, 1000, i32::MAX] {
        for w in shares.windows(2) {
            assert!(order_key(p, w[0]) <= order_key(p, w[1]));
        }
        assert!(order_key(p, 0.1) < order_key(p, 0.2));
        // Highest share at p still goes before share 0 at p − 1.
        assert!(order_key(p, f64::INFINITY) < order_key(p - 1, 0.0));
    }
    assert_eq!(order_key(3, 0.5), order_key(3, 0.5));
}
