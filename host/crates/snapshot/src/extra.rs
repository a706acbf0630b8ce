//! Host-side facts about tasks and jobs that plugins do not receive.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Per-session host-side facts about tasks and jobs not in the snapshot.
#[derive(Clone, Debug, Default)]
pub struct Extra {
    /// Per task, its pod's position in the cluster's pods.
    pub task_pod: Vec<usize>,
    /// Per task, whether it requests nothing but a pod slot (BestEffort).
    pub task_best_effort: Vec<bool>,
    /// Per task, whether its pod's `preemptionPolicy` is Never.
    pub task_preempt_never: Vec<bool>,
    /// Per task, the node preemption nominated it for (`NONE`: none).
    pub task_nominated: Vec<u32>,
    /// Per task, the placement rules of its pod tephra does not evaluate
    /// yet: every node rejects it with this reason.
    pub task_unevaluated: Vec<Option<Arc<str>>>,
    /// Per pending task, a hash of everything a plugin may read about it and
    /// its job except ids, names and times (request, role, priority,
    /// selectors, tolerations, affinity; the job's queue, minimums, priority, phase
    /// and annotations): tasks with equal classes get the same predicate and
    /// score answers on a node, so allocate asks once per class (see
    /// `actions::classes`). 0 for tasks that are not pending.
    pub task_class: Vec<u64>,
    /// Per task, whether nodes turned down with a resolvable reason may fit
    /// later in the session ([`rising`]).
    pub task_rising: Vec<bool>,
    /// Per task, whether its answers move with its peers' placements ([`volatile`]).
    pub task_volatile: Vec<bool>,
    /// Per job, its PodGroup's position in the cluster's PodGroups.
    pub job_pg: Vec<usize>,
    /// Per job, its tasks.
    pub job_tasks: Vec<Vec<u32>>,
    /// Per job, its time limit in ms (0: none; see [`tephra_model::timelimit`]).
    pub job_limit_ms: Vec<i64>,
    /// Per job, whether its limit is enforced (its queue does not let it
    /// overrun freely): only then may it run ahead of a reservation.
    pub job_limit_enforced: Vec<bool>,
    /// Per job, what its queue does when it overruns.
    pub job_overrun: Vec<tephra_model::timelimit::Overrun>,
    /// Per job, its minimum per role (interned role name → `minTaskMember`).
    pub job_roles: Vec<BTreeMap<u32, u32>>,
    /// Per queue, its creation time (ties in queue order go to the older).
    pub queue_created: Vec<i64>,
    /// The HyperNode tree the snapshot's topology columns come from.
    pub topology: Arc<tephra_model::topology::Tree>,
    /// Why the HyperNodes form no usable tree (jobs with a topology wait).
    pub topology_error: Option<String>,
    /// Per subgroup, its tasks.
    pub subgroup_tasks: Vec<Vec<u32>>,
    /// Per job, its subgroups.
    pub job_subgroups: Vec<Vec<u32>>,
}
