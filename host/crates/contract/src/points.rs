// Generated from wit/scheduler.wit by tephra-codegen; do not edit (cargo run -p tephra-codegen).
//! The contract as the host restates it: its version, the extension points
//! with their names, and the empty snapshot.

use crate::types::Snapshot;

/// The plugin contract version this host speaks (`wit/scheduler.wit`).
pub const CONTRACT: &str = "0.7.0";

/// The extension points a plugin may implement: every interface world
/// `all-points` exports beyond `plugin`, then `Events`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExtensionPoint {
    QueueOrder,
    JobOrder,
    TaskOrder,
    VictimQueueOrder,
    Predicate,
    NodeOrder,
    Overused,
    Allocatable,
    Preemptive,
    JobValid,
    JobReady,
    JobPipelined,
    JobEnqueueable,
    JobEnqueued,
    JobStarving,
    Preemptable,
    Reclaimable,
    VictimTasks,
    TargetJob,
    ReservedNodes,
    QueueStatus,
    HypernodeOrder,
    Evictable,
    /// Not an interface: every event batch is flushed to the policy before
    /// the session closes (`plugin-info.flush-events`).
    Events,
}

/// An extension point as the WIT spells it ("node-order"); for the current
/// contract, also the name of the interface a plugin exports for it.
pub fn point_name(p: ExtensionPoint) -> &'static str {
    match p {
        ExtensionPoint::QueueOrder => "queue-order",
        ExtensionPoint::JobOrder => "job-order",
        ExtensionPoint::TaskOrder => "task-order",
        ExtensionPoint::VictimQueueOrder => "victim-queue-order",
        ExtensionPoint::Predicate => "predicate",
        ExtensionPoint::NodeOrder => "node-order",
        ExtensionPoint::Overused => "overused",
        ExtensionPoint::Allocatable => "allocatable",
        ExtensionPoint::Preemptive => "preemptive",
        ExtensionPoint::JobValid => "job-valid",
        ExtensionPoint::JobReady => "job-ready",
        ExtensionPoint::JobPipelined => "job-pipelined",
        ExtensionPoint::JobEnqueueable => "job-enqueueable",
        ExtensionPoint::JobEnqueued => "job-enqueued",
        ExtensionPoint::JobStarving => "job-starving",
        ExtensionPoint::Preemptable => "preemptable",
        ExtensionPoint::Reclaimable => "reclaimable",
        ExtensionPoint::VictimTasks => "victim-tasks",
        ExtensionPoint::TargetJob => "target-job",
        ExtensionPoint::ReservedNodes => "reserved-nodes",
        ExtensionPoint::QueueStatus => "queue-status",
        ExtensionPoint::HypernodeOrder => "hypernode-order",
        ExtensionPoint::Evictable => "evictable",
        ExtensionPoint::Events => "events",
    }
}

/// A snapshot of nothing over `dims`: every column empty, `total` zeros.
pub fn empty_snapshot(dims: Vec<String>) -> Snapshot {
    let total = vec![0.0; dims.len()];
    Snapshot {
        dims,
        strings: Vec::new(),
        total,
        now_ms: 0,
        node_name: Vec::new(),
        node_allocatable: Vec::new(),
        node_used: Vec::new(),
        node_releasing: Vec::new(),
        node_pipelined: Vec::new(),
        node_unschedulable: Vec::new(),
        node_labels: Vec::new(),
        node_taints: Vec::new(),
        node_locked_job: Vec::new(),
        node_locked_queue: Vec::new(),
        queue_parent: Vec::new(),
        queue_weight: Vec::new(),
        queue_priority: Vec::new(),
        queue_reclaimable: Vec::new(),
        queue_state: Vec::new(),
        queue_capability: Vec::new(),
        queue_deserved: Vec::new(),
        queue_guarantee: Vec::new(),
        queue_annotations: Vec::new(),
        queue_affinity: Vec::new(),
        queue_guaranteed: Vec::new(),
        queue_reserve_percentage: Vec::new(),
        job_queue: Vec::new(),
        job_min_available: Vec::new(),
        job_has_min_resources: Vec::new(),
        job_min_resources: Vec::new(),
        job_min_task_member: Vec::new(),
        job_priority: Vec::new(),
        job_phase: Vec::new(),
        job_created_ms: Vec::new(),
        job_annotations: Vec::new(),
        reservation_targets: Vec::new(),
        task_job: Vec::new(),
        task_status: Vec::new(),
        task_node: Vec::new(),
        task_resreq: Vec::new(),
        task_priority: Vec::new(),
        task_preemptable: Vec::new(),
        task_role: Vec::new(),
        task_namespace: Vec::new(),
        task_priority_class: Vec::new(),
        task_created_ms: Vec::new(),
        task_started_ms: Vec::new(),
        task_estimated_ms: Vec::new(),
        task_node_selector: Vec::new(),
        task_tolerations: Vec::new(),
        task_affinity: Vec::new(),
        resident_node: Vec::new(),
        resident_namespace: Vec::new(),
        pod_labels: Vec::new(),
        pod_terms: Vec::new(),
        pod_ports: Vec::new(),
        task_spread: Vec::new(),
        node_images: Vec::new(),
        task_images: Vec::new(),
        pod_attachments: Vec::new(),
        node_attach_limits: Vec::new(),
        hypernode_name: Vec::new(),
        hypernode_tier: Vec::new(),
        hypernode_parent: Vec::new(),
        node_hypernode: Vec::new(),
        job_highest_tier: Vec::new(),
        job_topology: Vec::new(),
        subgroups: Vec::new(),
        task_subgroup: Vec::new(),
        job_min_subgroups: Vec::new(),
    }
}
