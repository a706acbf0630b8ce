//! Sessions that start from the last one, end to end with the built-in Wasm
//! plugins: cycle after cycle, a scheduler whose sessions (host and
//! plugins) are updated decides exactly what one that rebuilds every
//! session decides, and its plugins really took the update path.

use tephra::actions;
use tephra::config::SchedulerConfig;
use tephra::model::{Cluster, PodPhase};
use tephra::policy::Policies;
use tephra::scheduler::Library;
use tephra::session::{Decision, Outcome, Session};
use tephra::session_cache::SnapshotCache;
use tephra::synthetic::{generate, Spec, CONFIG};

fn run(ssn: &mut Session, config: &SchedulerConfig) {
    ssn.actions = config.actions.clone();
    for a in &config.actions {
        (actions::by_name(a).unwrap())(ssn);
    }
}

fn binds(out: &Outcome) -> Vec<(usize, String)> {
    out.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Bind { task, node } => {
                Some((out.extra.task_pod[*task as usize], out.names.nodes[*node as usize].clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn updated_sessions_decide_like_rebuilt_ones() {
    let spec = Spec { nodes: 120, pending_pods: 1500, running_pods: 300, queues: 4, node_groups: 3, seed: 5 };
    let mut c: Cluster = generate(&spec);
    let config = SchedulerConfig::parse(CONFIG, "bench config").unwrap();
    let lib = Library::load(None).unwrap();
    let (mut updated, mut rebuilt) = (lib.policies(&config, None).0, lib.policies(&config, None).0);
    let mut cache = SnapshotCache::default();
    let none = Default::default();
    let mut placed = 0;
    for cycle in 0..4 {
        let now = cycle * 1000;
        let mut a = Session::open_cached(&mut cache, &c, updated, &none, now, 9 + cycle as u64, &Default::default());
        run(&mut a, &config);
        let (out_a, pa) = a.close_cached(&mut cache);
        let mut b = Session::open_with(&c, rebuilt, &none, now, 9 + cycle as u64, &Default::default());
        run(&mut b, &config);
        let (out_b, pb) = b.close();
        (updated, rebuilt) = (pa, pb);
        assert!(out_a.faults.is_empty() && out_b.faults.is_empty(), "{:?} {:?}", out_a.faults, out_b.faults);
        let first = out_a.decisions.iter().zip(&out_b.decisions).position(|(x, y)| x != y);
        assert!(
            first.is_none() && out_a.decisions.len() == out_b.decisions.len(),
            "cycle {cycle}: {} decisions updated, {} rebuilt; first difference at {first:?}",
            out_a.decisions.len(),
            out_b.decisions.len()
        );
        // Two binds in three happen (the rest are placed again later); the
        // kubelet starts every other pod it was given.
        for (k, (pod, node)) in binds(&out_a).into_iter().enumerate().filter(|(k, _)| k % 3 != 2) {
            let p = c.pods.status_mut(pod);
            *p.node = Some(node);
            if k % 2 == 0 {
                *p.phase = PodPhase::Running;
                *p.started = Some(now + 500);
            }
            placed += 1;
        }
    }
    assert!(placed > 500, "placed {placed}");
    assert_eq!((cache.opens.full, cache.opens.updated), (1, 3));
    let counts: Vec<(String, u64)> = Policies::update_counts(&updated);
    assert!(!counts.is_empty() && counts.iter().all(|(_, n)| *n == 3), "{counts:?}");
    assert!(Policies::update_counts(&rebuilt).iter().all(|(_, n)| *n == 0));
}
