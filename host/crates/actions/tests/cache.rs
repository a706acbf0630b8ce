//! The snapshot cache across layers: sessions opened from the kept one after
//! status changes match a full build of the same cluster.

use tephra_dispatch::policy::Policies;
use tephra_model::cluster::{Cluster, Phase, PodPhase};
use tephra_readers::synthetic::{generate, Spec};
use tephra_session::session::{Decision, Outcome, Session};
use tephra_snapshot::cache::{first_difference, Opens, SnapshotCache};
use tephra_snapshot::{build, Built, StatusOverrides};

fn cycle(cache: &mut SnapshotCache, c: &Cluster, now_ms: i64) -> Outcome {
    let none = StatusOverrides::default();
    let policies = Policies::new(Vec::new(), true);
    let mut ssn = Session::open_cached(cache, c, policies, &none, now_ms, 1, &Default::default());
    (tephra_actions::by_name("allocate").unwrap())(&mut ssn);
    ssn.close_cached(cache).0
}

/// The parts an update makes, and a full build of the same cluster.
fn both(cache: &mut SnapshotCache, c: &Cluster) -> (Built, Built) {
    let none = StatusOverrides::default();
    let updated = cache.update(c, &none, 5).expect("an update");
    (updated, build(c, &none, 5))
}

/// Binds, starts, completions, evictions, nominations and phase changes,
/// on tasks and on pods that are not tasks, settle into the same session
/// a full build makes; anything else is a full build.
#[test]
fn status_changes_update_the_kept_session_like_a_full_build() {
    let spec = Spec { nodes: 40, pending_pods: 400, running_pods: 200, queues: 3, node_groups: 2, seed: 11 };
    let mut c = generate(&spec);
    // Another scheduler's pod, which only takes room on its node.
    let mut other = c.pods[0].clone();
    other.name = "not-ours".into();
    other.group = None;
    other.node = Some(c.nodes[1].name.clone());
    other.phase = PodPhase::Running;
    c.pods.push(other);
    let mut cache = SnapshotCache::default();
    let out = cycle(&mut cache, &c, 0);
    assert_eq!(cache.opens, Opens { full: 1, updated: 0 });
    let binds: Vec<(usize, String)> = out
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Bind { task, node } => {
                Some((out.extra.task_pod[*task as usize], out.names.nodes[*node as usize].clone()))
            }
            _ => None,
        })
        .collect();
    assert!(binds.len() > 100, "the first cycle placed {}", binds.len());
    drop(out);
    // Half the binds happen, and the kubelet starts some of those.
    for (k, (pod, node)) in binds.iter().enumerate().filter(|(k, _)| k % 2 == 0) {
        let p = c.pods.status_mut(*pod);
        *p.node = Some(node.clone());
        if k % 4 == 0 {
            *p.phase = PodPhase::Running;
            *p.started = Some(1234);
        }
    }
    let running: Vec<usize> =
        (0..c.pods.len()).filter(|&i| c.pods[i].phase == PodPhase::Running && c.pods[i].group.is_some()).collect();
    *c.pods.status_mut(running[0]).phase = PodPhase::Succeeded;
    *c.pods.status_mut(running[1]).deleting = true;
    *c.pods.status_mut(running[2]).node = None;
    *c.pods.status_mut(running[2]).phase = PodPhase::Pending;
    // Placed last cycle, but its bind did not happen: pending again, with its class.
    let pending = binds[1].0;
    *c.pods.status_mut(pending).nominated_node = Some(c.nodes[3].name.clone());
    let last = c.pods.len() - 1;
    *c.pods.status_mut(last).node = Some(c.nodes[2].name.clone());
    // A group with pending tasks changes phase: their classes change.
    let p = &c.pods[pending];
    let g = c.podgroups.iter().position(|g| g.namespace == p.namespace && Some(&g.name) == p.group.as_ref()).unwrap();
    let phase = if c.podgroups[g].phase == Phase::Pending { Phase::Inqueue } else { Phase::Pending };
    *c.podgroups.status_mut(g).phase = phase;

    let (updated, full) = both(&mut cache, &c);
    assert!(updated.snap == full.snap, "{}", first_difference(&updated.snap, &full.snap));
    assert_eq!(updated.extra.task_class, full.extra.task_class);
    assert_eq!(updated.extra.task_nominated, full.extra.task_nominated);
    assert_eq!(updated.basis.pod_nodes(), full.basis.pod_nodes());
    assert_eq!(updated.basis.job_signatures(), full.basis.job_signatures());
    assert_eq!(cache.opens, Opens { full: 1, updated: 1 });

    // A session after an update is kept like any other.
    cache.keep(updated);
    let out = cycle(&mut cache, &c, 10);
    assert_eq!(cache.opens.updated, 2);
    drop(out);
    // An added pod is a whole change.
    let extra = c.pods[0].clone();
    c.pods.push(extra);
    cycle(&mut cache, &c, 20);
    assert_eq!(cache.opens, Opens { full: 2, updated: 2 });
    // So is a changed spec, through any mutable access.
    c.pods[0].priority = Some(7);
    cycle(&mut cache, &c, 30);
    assert_eq!(cache.opens, Opens { full: 3, updated: 2 });
    // And another copy of the cluster.
    let copy = c.clone();
    cycle(&mut cache, &copy, 40);
    assert_eq!(cache.opens, Opens { full: 4, updated: 2 });
}
