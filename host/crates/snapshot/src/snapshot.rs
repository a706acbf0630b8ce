//! The columnar snapshot of a cluster: the same [`Snapshot`] every plugin
//! receives (dense ids, resource rows, interned strings), the host-side
//! facts beside it ([`Names`], [`Extra`]), and the full build from a
//! [`Cluster`]. [`crate::cache`] brings a kept build up to date instead.

use crate::basis::{Basis, Marks, Storage};
use crate::extra::Extra;
use crate::names::{class_hasher, Interner, NameMap, Names, CLASSLESS, NONE};
use crate::rules::{self, classless, rising, volatile, LabelKeys};
use crate::topology;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use tephra_contract::{
    empty_snapshot, Image, JobPhase, Label, Quantity, QueueState, RoleMin, Snapshot, Taint, TaskStatus, Toleration,
};
use tephra_model::cluster::{Cluster, PodPhase};
use tephra_model::resource::{self, BASE_DIMS, PODS};

/// Set once a cluster had a pod requesting a resource that no node, queue or
/// group names: later builds then scan pods for dimensions up front.
static PODS_NAME_DIMENSIONS: AtomicBool = AtomicBool::new(false);

/// Where a task's request counts on its node: (used, releasing, pipelined).
pub fn node_share(status: TaskStatus) -> (bool, bool, bool) {
    use TaskStatus::*;
    match status {
        Allocated | Binding | Bound | Running => (true, false, false),
        Releasing => (true, true, false),
        Pipelined => (false, false, true),
        Pending | Succeeded | Failed | Unknown => (false, false, false),
    }
}

/// Volcano's `AllocatedStatus`.
pub fn is_allocated(s: TaskStatus) -> bool {
    matches!(s, TaskStatus::Allocated | TaskStatus::Binding | TaskStatus::Bound | TaskStatus::Running)
}

/// A PodGroup phase as Kubernetes spells it.
pub fn phase_name(p: JobPhase) -> &'static str {
    match p {
        JobPhase::Pending => "Pending",
        JobPhase::Inqueue => "Inqueue",
        JobPhase::Running => "Running",
        JobPhase::Unknown => "Unknown",
        JobPhase::Completed => "Completed",
    }
}

/// A snapshot built without its plugins: what [`build`] makes from a
/// cluster and [`crate::cache::SnapshotCache`] makes from the last session.
pub struct Built {
    /// The snapshot plugins receive.
    pub snap: Snapshot,
    /// The names of what it numbers.
    pub names: Arc<Names>,
    /// The host-side facts beside it.
    pub extra: Arc<Extra>,
    /// Resource dimensions per row.
    pub d: usize,
    /// Node id by name.
    pub node_index: NameMap<String>,
    /// Queue id by name.
    pub queue_index: NameMap<String>,
    /// What the next session needs to start from this one.
    pub basis: Basis,
    /// For an update: the tasks and nodes that moved since the last session.
    pub moved: Option<Moved>,
}

/// What an update changed in the kept session, for plugins that keep it.
pub struct Moved {
    /// The kept session's id.
    pub base: u64,
    /// Tasks whose status or node changed.
    pub tasks: Vec<u32>,
    /// Nodes whose usage changed.
    pub nodes: Vec<u32>,
    /// Residents whose node changed.
    pub residents: Vec<u32>,
}

/// A hash of what plugins may read about a job except its id, name and
/// times: queue, gang minimums, priority, phase, annotations.
pub fn job_signature(g: &tephra_model::cluster::PodGroup, queue: u32) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = class_hasher();
    (queue, g.min_member, &g.min_task_member, &g.priority_class, g.priority, &g.annotations).hash(&mut h);
    (g.phase as u8).hash(&mut h);
    for (k, v) in g.min_resources.iter().flatten() {
        (k, v.to_bits()).hash(&mut h);
    }
    g.min_resources.is_some().hash(&mut h);
    h.finish()
}

/// The class hash of a pending pod of a job with signature `job` (see
/// [`Extra::task_class`]); `keys`: the label keys selectors read
/// ([`LabelKeys`]).
pub fn class_of(p: &tephra_model::cluster::Pod, req: &[f64], job: u64, keys: &LabelKeys) -> u64 {
    use std::hash::{Hash, Hasher};
    if classless(p) || keys.scored(p) {
        return CLASSLESS;
    }
    let mut h = class_hasher();
    for k in &keys.selectors {
        p.labels.get(k).hash(&mut h);
    }
    (&p.preferred, &p.pod_terms, &p.ports, &p.spread, &p.claims, &p.images).hash(&mut h);
    job.hash(&mut h);
    req.iter().for_each(|v| v.to_bits().hash(&mut h));
    (&p.task_spec, &p.namespace, &p.priority_class, p.priority, p.preemptable).hash(&mut h);
    p.annotations.get("volcano.sh/task-priority").hash(&mut h);
    p.node_selector.hash(&mut h);
    p.unevaluated.hash(&mut h);
    for t in &p.tolerations {
        (&t.key, &t.operator, &t.value, &t.effect).hash(&mut h);
    }
    p.affinity.hash(&mut h);
    h.finish().min(CLASSLESS - 1)
}

/// A task's status from its pod's phase, whether it is bound, and whether it is being deleted.
pub fn task_status(phase: PodPhase, bound: bool, deleting: bool) -> TaskStatus {
    match phase {
        _ if deleting && matches!(phase, PodPhase::Running | PodPhase::Pending) => TaskStatus::Releasing,
        PodPhase::Running => TaskStatus::Running,
        PodPhase::Pending if bound => TaskStatus::Bound,
        PodPhase::Pending => TaskStatus::Pending,
        PodPhase::Succeeded => TaskStatus::Succeeded,
        PodPhase::Failed => TaskStatus::Failed,
        PodPhase::Unknown => TaskStatus::Unknown,
    }
}

/// A PodGroup phase as the snapshot has it.
pub fn job_phase(p: tephra_model::cluster::Phase) -> JobPhase {
    match p {
        tephra_model::cluster::Phase::Pending => JobPhase::Pending,
        tephra_model::cluster::Phase::Inqueue => JobPhase::Inqueue,
        tephra_model::cluster::Phase::Running => JobPhase::Running,
        tephra_model::cluster::Phase::Unknown => JobPhase::Unknown,
        tephra_model::cluster::Phase::Completed => JobPhase::Completed,
    }
}

/// Task status overrides (pod key → status) used by scenario files.
pub type StatusOverrides = HashMap<String, TaskStatus>;

/// A full build from the cluster.
pub fn build(cluster: &Cluster, overrides: &StatusOverrides, now_ms: i64) -> Built {
    // Pods seldom request a resource that no node, queue or group names,
    // so their requests are not scanned for dimensions up front (a tenth
    // of the build at 100k pods); one that does makes the build start
    // over with every pod scanned.
    // Once a cluster had such a pod, later builds scan pods up front
    // rather than build twice every cycle.
    build_scanning(cluster, overrides, now_ms, PODS_NAME_DIMENSIONS.load(Relaxed))
        .or_else(|| {
            PODS_NAME_DIMENSIONS.store(true, Relaxed);
            build_scanning(cluster, overrides, now_ms, true)
        })
        .expect("with every pod scanned, every dimension is known")
}

/// The build, or `None` when a pod requests a dimension the scan (of pods
/// too, when `scan_pods`) did not find.
fn build_scanning(cluster: &Cluster, overrides: &StatusOverrides, now_ms: i64, scan_pods: bool) -> Option<Built> {
    let mut dims: Vec<String> = BASE_DIMS.iter().map(|s| s.to_string()).collect();
    let mut scalars: BTreeSet<&str> = BTreeSet::new();
    let pods = cluster.pods.iter().filter(|_| scan_pods).map(|p| &p.requests);
    let lists = cluster
        .nodes
        .iter()
        .map(|n| &n.allocatable)
        .chain(pods)
        .chain(cluster.queues.iter().flat_map(|q| [&q.capability, &q.deserved, &q.guarantee, &q.reserve_percentage]))
        .chain(cluster.podgroups.iter().filter_map(|g| g.min_resources.as_ref()));
    for l in lists {
        scalars.extend(l.keys().map(String::as_str).filter(|k| !BASE_DIMS.contains(k)));
    }
    dims.extend(scalars.into_iter().map(str::to_string));
    let d = dims.len();
    // A handful of dimensions: a scan beats hashing.
    let dim_of = |k: &str| dims.iter().position(|d| d == k);
    let dense_into = |l: &tephra_model::resource::ResourceList, row: &mut Vec<f64>| dense_row(&dims, l, row);
    // Queues' and groups' dimensions are always scanned.
    let sparse = |owner: u32, l: &tephra_model::resource::ResourceList, out: &mut Vec<Quantity>| {
        for (k, v) in l {
            if let Some(dim) = dim_of(k) {
                out.push(Quantity { owner, dim: dim as u32, value: *v });
            }
        }
    };
    let mut strings = Interner { strings: vec![String::new()], index: NameMap::default() };
    strings.index.insert(String::new(), 0);
    let mut names = Names::default();
    let mut extra = Extra::default();
    let mut basis = Basis { pg_job: vec![NONE; cluster.podgroups.len()], ..Default::default() };
    let mut snap = empty_snapshot(dims.clone());

    let mut node_index = NameMap::default();
    let mut row = Vec::with_capacity(d);
    for (i, n) in cluster.nodes.iter().enumerate() {
        node_index.insert(n.name.clone(), i as u32);
        names.nodes.push(n.name.clone());
        dense_into(&n.allocatable, &mut row); // nodes are always scanned
        resource::add_scaled(&mut snap.total, &row, 1.0);
        snap.node_allocatable.extend(&row);
        snap.node_unschedulable.push(n.unschedulable);
        snap.node_name.push(strings.id(&n.name));
        for (names, size) in &n.images {
            for name in names {
                snap.node_images.push(Image { owner: i as u32, name: strings.id(name), size: *size });
            }
        }
        for (k, v) in &n.labels {
            snap.node_labels.push(Label { owner: i as u32, key: strings.id(k), value: strings.id(v) });
        }
        for t in &n.taints {
            snap.node_taints.push(Taint {
                node: i as u32,
                key: strings.id(&t.key),
                value: strings.id(&t.value),
                effect: strings.id(&t.effect),
            });
        }
    }
    let nn = cluster.nodes.len();
    snap.node_used = vec![0.0; nn * d];
    snap.node_releasing = vec![0.0; nn * d];
    snap.node_pipelined = vec![0.0; nn * d];

    let mut queue_index = NameMap::default();
    for (i, q) in cluster.queues.iter().enumerate() {
        queue_index.insert(q.name.clone(), i as u32);
    }
    let root = queue_index.get("root").copied();
    for (i, q) in cluster.queues.iter().enumerate() {
        let i = i as u32;
        names.queues.push(q.name.clone());
        let parent = match &q.parent {
            Some(p) => queue_index.get(p).copied().unwrap_or(NONE),
            None if Some(i) != root => root.unwrap_or(NONE),
            None => NONE,
        };
        snap.queue_parent.push(parent);
        snap.queue_weight.push(q.weight);
        snap.queue_priority.push(q.priority);
        snap.queue_reclaimable.push(q.reclaimable);
        snap.queue_state.push(match q.state {
            tephra_model::cluster::QueueState::Open => QueueState::Open,
            tephra_model::cluster::QueueState::Closed => QueueState::Closed,
            tephra_model::cluster::QueueState::Closing => QueueState::Closing,
            tephra_model::cluster::QueueState::Unknown => QueueState::Unknown,
        });
        sparse(i, &q.capability, &mut snap.queue_capability);
        sparse(i, &q.deserved, &mut snap.queue_deserved);
        sparse(i, &q.guarantee, &mut snap.queue_guarantee);
        snap.queue_guaranteed.push(q.guaranteed);
        sparse(i, &q.reserve_percentage, &mut snap.queue_reserve_percentage);
        for (k, v) in &q.annotations {
            snap.queue_annotations.push(Label { owner: i, key: strings.id(k), value: strings.id(v) });
        }
        for (kind, groups) in &q.affinity {
            for g in groups {
                snap.queue_affinity.push(Label { owner: i, key: strings.id(kind), value: strings.id(g) });
            }
        }
        extra.queue_created.push(q.created);
    }

    // Jobs: PodGroups whose queue exists (others are invisible, as in Volcano).
    let mut job_of: NameMap<(&str, &str)> = NameMap::default();
    let mut job_sig = Vec::new();
    for (gi, g) in cluster.podgroups.iter().enumerate() {
        let Some(&q) = queue_index.get(&g.queue) else { continue };
        let j = snap.job_queue.len() as u32;
        job_sig.push(job_signature(g, q));
        job_of.insert((g.namespace.as_str(), g.name.as_str()), j);
        basis.pg_job[gi] = j;
        names.jobs.push(g.key());
        extra.job_pg.push(gi);
        let queue = cluster.queues.get(q as usize);
        let limit = tephra_model::timelimit::job_limit_ms(g, queue);
        let overrun = tephra_model::timelimit::overrun(queue);
        extra.job_limit_ms.push(limit.unwrap_or(0));
        extra.job_limit_enforced.push(limit.is_some() && overrun.enforced());
        extra.job_overrun.push(overrun);
        snap.job_queue.push(q);
        snap.job_min_available.push(g.min_member);
        snap.job_has_min_resources.push(g.min_resources.is_some());
        if let Some(m) = &g.min_resources {
            sparse(j, m, &mut snap.job_min_resources);
        }
        let mut roles = BTreeMap::new();
        for (role, &count) in &g.min_task_member {
            let r = strings.id(role);
            roles.insert(r, count);
            snap.job_min_task_member.push(RoleMin { job: j, role: r, count });
        }
        extra.job_roles.push(roles);
        let prio = g.priority.or_else(|| cluster.class_priority(g.priority_class.as_deref())).unwrap_or(0);
        snap.job_priority.push(prio);
        snap.job_phase.push(job_phase(g.phase));
        snap.job_created_ms.push(g.created);
        for (k, v) in &g.annotations {
            snap.job_annotations.push(Label { owner: j, key: strings.id(k), value: strings.id(v) });
        }
        extra.job_tasks.push(Vec::new());
    }

    // Tasks, and node usage from every pod on a node (other schedulers' too).
    let keys = LabelKeys::of(cluster.pods.iter());
    let mut residents = rules::Residents::default();
    let mut device_rules = None;
    let mut req = Vec::with_capacity(d);
    for (pi, p) in cluster.pods.iter().enumerate() {
        if !dense_into(&p.requests, &mut req) {
            return None;
        }
        req[PODS] += 1.0;
        let node = p.node.as_ref().and_then(|n| node_index.get(n).copied()).unwrap_or(NONE);
        let mut status = task_status(p.phase, p.node.is_some(), p.deleting);
        let job = p.group.as_ref().and_then(|g| job_of.get(&(p.namespace.as_str(), g.as_str())).copied());
        if !overrides.is_empty() {
            if let Some(&s) = overrides.get(&p.key()) {
                status = s;
            }
        }
        if node != NONE {
            add_to_node(&mut snap, d, node, &req, status, 1.0);
        }
        let Some(j) = job else {
            basis.pod_task.push(NONE);
            basis.pod_node.push(node);
            basis.pod_status.push(status);
            basis.pod_resident.push(snap.resident_node.len() as u32);
            let at = resident_at(node, status);
            rules::resident(&mut strings, cluster, &mut snap, &mut residents, p, at);
            continue;
        };
        let t = snap.task_job.len() as u32;
        basis.pod_task.push(t);
        basis.pod_resident.push(NONE);
        basis.pod_node.push(NONE);
        basis.pod_status.push(status);
        names.tasks.push(p.key());
        extra.task_pod.push(pi);
        extra.task_best_effort.push(resource::is_empty(&req));
        extra.task_preempt_never.push(
            p.preempt_never
                || p.priority_class
                    .as_ref()
                    .and_then(|c| cluster.priority_classes.get(c))
                    .is_some_and(|c| c.preempt_never),
        );
        extra.task_nominated.push(p.nominated_node.as_ref().and_then(|n| node_index.get(n).copied()).unwrap_or(NONE));
        let mut why: Vec<String> = p.unevaluated.iter().map(|f| format!("{f} not evaluated by tephra yet")).collect();
        if !p.claims.is_empty() {
            why.extend(rules::volumes(&mut strings, cluster, &mut snap, p, t));
        }
        if !p.device_claims.is_empty() && p.node.is_none() {
            let d = device_rules.get_or_insert_with(|| rules::DeviceRules::new(cluster));
            why.extend(rules::devices(&mut strings, d, cluster, &mut snap, p, t));
        }
        extra.task_unevaluated.push((!why.is_empty()).then(|| why.join("; ").into()));
        let class = if status == TaskStatus::Pending { class_of(p, &req, job_sig[j as usize], &keys) } else { 0 };
        extra.task_class.push(class);
        extra.task_rising.push(rising(p));
        extra.task_volatile.push(volatile(p));
        extra.job_tasks[j as usize].push(t);
        snap.task_job.push(j);
        snap.task_status.push(status);
        snap.task_node.push(node);
        snap.task_resreq.extend(&req);
        let prio =
            p.annotations.get("volcano.sh/task-priority").and_then(|v| v.parse().ok()).or(p.priority).unwrap_or(1);
        snap.task_priority.push(prio);
        snap.task_preemptable.push(p.preemptable);
        snap.task_role.push(strings.id(&p.task_spec));
        snap.task_namespace.push(strings.id(&p.namespace));
        snap.task_priority_class.push(strings.id(p.priority_class.as_deref().unwrap_or("")));
        snap.task_created_ms.push(p.created);
        snap.task_started_ms.push(p.started.unwrap_or(0));
        // A task is expected to run no longer than its limits: this is how
        // plugins see time limits.
        let limit = Some(extra.job_limit_ms[j as usize]).filter(|&l| l > 0);
        snap.task_estimated_ms.push(tephra_model::timelimit::expected_run_ms(p, limit).unwrap_or(0));
        for (k, v) in &p.node_selector {
            snap.task_node_selector.push(Label { owner: t, key: strings.id(k), value: strings.id(v) });
        }
        for tol in &p.tolerations {
            snap.task_tolerations.push(Toleration {
                task: t,
                key: strings.id(&tol.key),
                operator: strings.id(if tol.operator.is_empty() { "Equal" } else { &tol.operator }),
                value: strings.id(&tol.value),
                effect: strings.id(&tol.effect),
            });
        }
        rules::task(&mut strings, &cluster.namespaces, &mut snap, p, t);
    }
    residents.append(&mut snap);
    rules::attach_limits(&mut strings, cluster, &mut snap, &node_index);
    topology::columns(&mut strings, cluster, &mut snap, &mut extra);
    snap.strings = strings.strings;
    snap.now_ms = now_ms;
    basis.marks = Marks::of(cluster);
    basis.classes = cluster.priority_classes.clone();
    basis.namespaces = cluster.namespaces.clone();
    basis.storage = Storage::of(cluster);
    basis.hypernodes = cluster.hypernodes.clone();
    basis.topology_error = cluster.topology_error.clone();
    basis.selector_keys = keys;
    basis.job_sig = job_sig;
    basis.overrides = !overrides.is_empty();
    let names = Arc::new(names);
    Some(Built { snap, names, extra: Arc::new(extra), d, node_index, queue_index, basis, moved: None })
}

/// Moves `req` from where `(node, status)` `from` counts it on the nodes to
/// where `to` counts it.
pub fn move_on_nodes(snap: &mut Snapshot, d: usize, req: &[f64], from: (u32, TaskStatus), to: (u32, TaskStatus)) {
    if from.0 != NONE {
        add_to_node(snap, d, from.0, req, from.1, -1.0);
    }
    if to.0 != NONE {
        add_to_node(snap, d, to.0, req, to.1, 1.0);
    }
}

/// `l` as a dense row over `dims`; false when it names a dimension not there
/// (a handful of dimensions: a scan beats hashing).
pub fn dense_row(dims: &[String], l: &tephra_model::resource::ResourceList, row: &mut Vec<f64>) -> bool {
    row.clear();
    row.resize(dims.len(), 0.0);
    l.iter().all(|(k, v)| dims.iter().position(|d| d == k).map(|i| row[i] = *v).is_some())
}

fn add_to_node(snap: &mut Snapshot, d: usize, node: u32, req: &[f64], status: TaskStatus, sign: f64) {
    let (used, releasing, pipelined) = node_share(status);
    let range = node as usize * d..(node as usize + 1) * d;
    if used {
        resource::add_scaled(&mut snap.node_used[range.clone()], req, sign);
    }
    if releasing {
        resource::add_scaled(&mut snap.node_releasing[range.clone()], req, sign);
    }
    if pipelined {
        resource::add_scaled(&mut snap.node_pipelined[range], req, sign);
    }
}

/// Where a resident counts for placement rules: its node, unless it finished.
pub fn resident_at(node: u32, status: TaskStatus) -> u32 {
    if matches!(status, TaskStatus::Succeeded | TaskStatus::Failed) {
        NONE
    } else {
        node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(c: &Cluster) -> Built {
        build(c, &Default::default(), 0)
    }

    /// A resource only a pod names is found by the second, full scan; one a
    /// node names needs no second scan. Either way rows line up with `dims`.
    #[test]
    fn dimensions_only_pods_request_are_found() {
        let mut c = tephra_readers::synthetic::small(2, 2000.0, 2, 500.0, 1);
        c.nodes[0].allocatable.insert("nvidia.com/gpu".into(), 4000.0);
        c.pods[0].requests.insert("nvidia.com/gpu".into(), 1000.0);
        c.pods[1].requests.insert("example.com/widget".into(), 3.0);
        let ssn = open(&c);
        assert_eq!(ssn.snap.dims[3..], ["example.com/widget".to_string(), "nvidia.com/gpu".to_string()]);
        let d = ssn.d;
        let row = |t: usize| &ssn.snap.task_resreq[t * d..(t + 1) * d];
        let pod = |name: &str| ssn.names.tasks.iter().position(|n| n.ends_with(name)).unwrap();
        assert_eq!(row(pod(&c.pods[0].name))[4], 1000.0);
        assert_eq!(row(pod(&c.pods[1].name))[3], 3.0);
        assert_eq!(ssn.snap.node_allocatable[4], 4000.0);
    }
}
