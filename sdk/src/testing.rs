//! Building snapshots by hand, for native unit tests of policy logic.

use crate::session::{Session, NONE};
use crate::types::{JobPhase, QueueState, Snapshot, SnapshotDelta, TaskStatus};

/// Builds a [`Snapshot`] one object at a time. Dimensions are cpu (millicores),
/// memory (bytes), pods, then any scalars given to [`SnapshotBuilder::new`].
pub struct SnapshotBuilder {
    pub snap: Snapshot,
}

impl SnapshotBuilder {
    pub fn new(scalars: &[&str]) -> Self {
        let mut dims = vec!["cpu".to_string(), "memory".into(), "pods".into()];
        dims.extend(scalars.iter().map(|s| s.to_string()));
        // The cluster's HyperNode (0) is always there, one tier up.
        let snap = Snapshot {
            strings: vec![String::new()],
            hypernode_name: vec![0],
            hypernode_tier: vec![1],
            hypernode_parent: vec![crate::NONE],
            ..crate::contract::empty_snapshot(dims)
        };
        SnapshotBuilder { snap }
    }

    fn row(&self, v: &[f64]) -> Vec<f64> {
        let mut r = vec![0.0; self.snap.dims.len()];
        r[..v.len()].copy_from_slice(v);
        r
    }

    /// Interns a string.
    pub fn string(&mut self, s: &str) -> u32 {
        match self.snap.strings.iter().position(|x| x == s) {
            Some(i) => i as u32,
            None => {
                self.snap.strings.push(s.into());
                self.snap.strings.len() as u32 - 1
            }
        }
    }

    /// A node with this allocatable row; returns its id.
    pub fn node(&mut self, allocatable: &[f64]) -> u32 {
        let r = self.row(allocatable);
        crate::resource::add(&mut self.snap.total, &r);
        self.snap.node_allocatable.extend(&r);
        let zero = vec![0.0; r.len()];
        self.snap.node_used.extend(&zero);
        self.snap.node_releasing.extend(&zero);
        self.snap.node_pipelined.extend(&zero);
        self.snap.node_unschedulable.push(false);
        let name = format!("n{}", self.snap.node_name.len());
        let name = self.string(&name);
        self.snap.node_name.push(name);
        self.snap.node_locked_job.push(NONE);
        self.snap.node_locked_queue.push(NONE);
        self.snap.node_hypernode.push(0);
        self.snap.node_unschedulable.len() as u32 - 1
    }

    /// A HyperNode of `tier` under `parent` (0: the cluster, whose tier
    /// follows the highest); returns its id.
    pub fn hypernode(&mut self, name: &str, tier: u32, parent: u32) -> u32 {
        let name = self.string(name);
        self.snap.hypernode_name.push(name);
        self.snap.hypernode_tier.push(tier);
        self.snap.hypernode_parent.push(parent);
        self.snap.hypernode_tier[0] = self.snap.hypernode_tier[0].max(tier + 1);
        self.snap.hypernode_name.len() as u32 - 1
    }

    /// Gives `job` a hard network-topology limit (`NONE`: a spec without one).
    pub fn topology(&mut self, job: u32, highest_tier: u32) {
        self.snap.job_highest_tier[job as usize] = highest_tier;
        self.snap.job_topology[job as usize] = true;
    }

    /// A subgroup of `job` from policy `policy`; returns its id.
    pub fn subgroup(&mut self, job: u32, policy: &str, min_available: u32, highest_tier: u32, topology: bool) -> u32 {
        let policy = self.string(policy);
        self.snap.subgroups.push(crate::types::Subgroup { job, policy, min_available, highest_tier, topology });
        self.snap.subgroups.len() as u32 - 1
    }

    /// Puts `task` in `subgroup`.
    pub fn join(&mut self, task: u32, subgroup: u32) {
        self.snap.task_subgroup[task as usize] = subgroup;
    }

    /// Puts `node` in the lowest-tier HyperNode `hypernode`.
    pub fn place(&mut self, node: u32, hypernode: u32) {
        self.snap.node_hypernode[node as usize] = hypernode;
    }

    /// A root-level open queue with this weight.
    pub fn queue(&mut self, weight: f64) -> u32 {
        self.snap.queue_parent.push(NONE);
        self.snap.queue_weight.push(weight);
        self.snap.queue_priority.push(0);
        self.snap.queue_reclaimable.push(true);
        self.snap.queue_state.push(QueueState::Open);
        self.snap.queue_guaranteed.push(false);
        self.snap.queue_parent.len() as u32 - 1
    }

    /// An Inqueue job of priority 0.
    pub fn job(&mut self, queue: u32, min_available: u32) -> u32 {
        self.snap.job_queue.push(queue);
        self.snap.job_min_available.push(min_available);
        self.snap.job_has_min_resources.push(false);
        self.snap.job_priority.push(0);
        self.snap.job_phase.push(JobPhase::Inqueue);
        self.snap.job_created_ms.push(0);
        self.snap.job_highest_tier.push(NONE);
        self.snap.job_topology.push(false);
        self.snap.job_queue.len() as u32 - 1
    }

    /// A task of `job` requesting `req` (plus one pod), with this status and node.
    pub fn task(&mut self, job: u32, req: &[f64], status: TaskStatus, node: u32) -> u32 {
        let mut r = self.row(req);
        r[crate::resource::PODS] = 1.0;
        let t = self.snap.task_job.len() as u32;
        if node != NONE {
            let (used, releasing, pipelined) = crate::session::node_share(status);
            let d = r.len();
            for (k, &x) in r.iter().enumerate() {
                let i = node as usize * d + k;
                if used {
                    self.snap.node_used[i] += x;
                }
                if releasing {
                    self.snap.node_releasing[i] += x;
                }
                if pipelined {
                    self.snap.node_pipelined[i] += x;
                }
            }
        }
        self.snap.task_job.push(job);
        self.snap.task_status.push(status);
        self.snap.task_node.push(node);
        self.snap.task_resreq.extend(r);
        self.snap.task_priority.push(1);
        self.snap.task_preemptable.push(true);
        self.snap.task_role.push(0);
        self.snap.task_namespace.push(0);
        self.snap.task_priority_class.push(0);
        self.snap.task_created_ms.push(0);
        self.snap.task_started_ms.push(0);
        self.snap.task_estimated_ms.push(0);
        self.snap.task_subgroup.push(NONE);
        t
    }

    pub fn build(self) -> Session {
        Session::new(self.snap)
    }
}

/// The `snapshot-delta` that takes a session of `old` to `new` as the host
/// sends it: the tasks whose status, node or start time differ, every node's
/// usage rows, and the per-cycle columns. The snapshots must differ in
/// nothing else (the host sends a whole snapshot then).
pub fn delta(old: &Snapshot, new: &Snapshot) -> SnapshotDelta {
    let moved = |t: &usize| {
        (old.task_status[*t], old.task_node[*t], old.task_started_ms[*t])
            != (new.task_status[*t], new.task_node[*t], new.task_started_ms[*t])
    };
    let tasks: Vec<usize> = (0..new.task_job.len()).filter(moved).collect();
    let residents: Vec<u32> = (0..new.resident_node.len() as u32)
        .filter(|&r| old.resident_node[r as usize] != new.resident_node[r as usize])
        .collect();
    SnapshotDelta {
        now_ms: new.now_ms,
        task_status: tasks.iter().map(|&t| new.task_status[t]).collect(),
        task_node: tasks.iter().map(|&t| new.task_node[t]).collect(),
        task_started_ms: tasks.iter().map(|&t| new.task_started_ms[t]).collect(),
        tasks: tasks.into_iter().map(|t| t as u32).collect(),
        nodes: (0..new.node_unschedulable.len() as u32).collect(),
        resident_node: residents.iter().map(|&r| new.resident_node[r as usize]).collect(),
        residents,
        node_used: new.node_used.clone(),
        node_releasing: new.node_releasing.clone(),
        node_pipelined: new.node_pipelined.clone(),
        node_locked_job: new.node_locked_job.clone(),
        node_locked_queue: new.node_locked_queue.clone(),
        job_phase: new.job_phase.clone(),
        reservation_targets: new.reservation_targets.clone(),
    }
}
