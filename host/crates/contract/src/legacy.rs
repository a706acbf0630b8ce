//! The earlier contract versions the host still loads, as Rust types that
//! share everything unchanged with the current ones: a plugin built against
//! an earlier contract gets the same values, minus what its version lacks.

use crate::bindings::current::tephra::scheduler0_7_0::types as current;

/// An earlier version's `add_to_linker` for its (function-less) `types`
/// instance, which its plugins import; bindgen calls it through `with:`.
macro_rules! types_instance {
    ($name:literal) => {
        pub fn add_to_linker<T, D>(
            linker: &mut wasmtime::component::Linker<T>,
            _: fn(&mut T) -> D::Data<'_>,
        ) -> wasmtime::Result<()>
        where
            D: HostWithStore<T>,
            for<'a> D::Data<'a>: Host,
            T: 'static,
        {
            linker.instance($name)?;
            Ok(())
        }
    };
}

/// Contract 0.6.0's `types`: the current ones, with a snapshot without the
/// topology (HyperNodes, network-topology constraints, subgroups).
pub mod types_0_6 {
    pub use super::current::*;
    use wasmtime::component::{ComponentType, Lift, Lower};

    types_instance!("tephra:scheduler/types@0.6.0");

    #[derive(ComponentType, Lift, Lower, Clone, Debug, PartialEq)]
    #[component(record)]
    pub struct Snapshot {
        #[component(name = "dims")]
        pub dims: Vec<String>,
        #[component(name = "strings")]
        pub strings: Vec<String>,
        #[component(name = "total")]
        pub total: Vec<f64>,
        #[component(name = "now-ms")]
        pub now_ms: i64,
        #[component(name = "node-name")]
        pub node_name: Vec<u32>,
        #[component(name = "node-allocatable")]
        pub node_allocatable: Vec<f64>,
        #[component(name = "node-used")]
        pub node_used: Vec<f64>,
        #[component(name = "node-releasing")]
        pub node_releasing: Vec<f64>,
        #[component(name = "node-pipelined")]
        pub node_pipelined: Vec<f64>,
        #[component(name = "node-unschedulable")]
        pub node_unschedulable: Vec<bool>,
        #[component(name = "node-labels")]
        pub node_labels: Vec<Label>,
        #[component(name = "node-taints")]
        pub node_taints: Vec<Taint>,
        #[component(name = "node-locked-job")]
        pub node_locked_job: Vec<u32>,
        #[component(name = "node-locked-queue")]
        pub node_locked_queue: Vec<u32>,
        #[component(name = "queue-parent")]
        pub queue_parent: Vec<u32>,
        #[component(name = "queue-weight")]
        pub queue_weight: Vec<f64>,
        #[component(name = "queue-priority")]
        pub queue_priority: Vec<i32>,
        #[component(name = "queue-reclaimable")]
        pub queue_reclaimable: Vec<bool>,
        #[component(name = "queue-state")]
        pub queue_state: Vec<QueueState>,
        #[component(name = "queue-capability")]
        pub queue_capability: Vec<Quantity>,
        #[component(name = "queue-deserved")]
        pub queue_deserved: Vec<Quantity>,
        #[component(name = "queue-guarantee")]
        pub queue_guarantee: Vec<Quantity>,
        #[component(name = "queue-annotations")]
        pub queue_annotations: Vec<Label>,
        #[component(name = "queue-affinity")]
        pub queue_affinity: Vec<Label>,
        #[component(name = "queue-guaranteed")]
        pub queue_guaranteed: Vec<bool>,
        #[component(name = "queue-reserve-percentage")]
        pub queue_reserve_percentage: Vec<Quantity>,
        #[component(name = "job-queue")]
        pub job_queue: Vec<u32>,
        #[component(name = "job-min-available")]
        pub job_min_available: Vec<u32>,
        #[component(name = "job-has-min-resources")]
        pub job_has_min_resources: Vec<bool>,
        #[component(name = "job-min-resources")]
        pub job_min_resources: Vec<Quantity>,
        #[component(name = "job-min-task-member")]
        pub job_min_task_member: Vec<RoleMin>,
        #[component(name = "job-priority")]
        pub job_priority: Vec<i32>,
        #[component(name = "job-phase")]
        pub job_phase: Vec<JobPhase>,
        #[component(name = "job-created-ms")]
        pub job_created_ms: Vec<i64>,
        #[component(name = "job-annotations")]
        pub job_annotations: Vec<Label>,
        #[component(name = "reservation-targets")]
        pub reservation_targets: Vec<u32>,
        #[component(name = "task-job")]
        pub task_job: Vec<u32>,
        #[component(name = "task-status")]
        pub task_status: Vec<TaskStatus>,
        #[component(name = "task-node")]
        pub task_node: Vec<u32>,
        #[component(name = "task-resreq")]
        pub task_resreq: Vec<f64>,
        #[component(name = "task-priority")]
        pub task_priority: Vec<i32>,
        #[component(name = "task-preemptable")]
        pub task_preemptable: Vec<bool>,
        #[component(name = "task-role")]
        pub task_role: Vec<u32>,
        #[component(name = "task-namespace")]
        pub task_namespace: Vec<u32>,
        #[component(name = "task-priority-class")]
        pub task_priority_class: Vec<u32>,
        #[component(name = "task-created-ms")]
        pub task_created_ms: Vec<i64>,
        #[component(name = "task-started-ms")]
        pub task_started_ms: Vec<i64>,
        #[component(name = "task-estimated-ms")]
        pub task_estimated_ms: Vec<i64>,
        #[component(name = "task-node-selector")]
        pub task_node_selector: Vec<Label>,
        #[component(name = "task-tolerations")]
        pub task_tolerations: Vec<Toleration>,
        #[component(name = "task-affinity")]
        pub task_affinity: Vec<AffinityExpr>,
        #[component(name = "resident-node")]
        pub resident_node: Vec<u32>,
        #[component(name = "resident-namespace")]
        pub resident_namespace: Vec<u32>,
        #[component(name = "pod-labels")]
        pub pod_labels: Vec<Label>,
        #[component(name = "pod-terms")]
        pub pod_terms: Vec<PodTerm>,
        #[component(name = "pod-ports")]
        pub pod_ports: Vec<HostPort>,
        #[component(name = "task-spread")]
        pub task_spread: Vec<Spread>,
        #[component(name = "node-images")]
        pub node_images: Vec<Image>,
        #[component(name = "task-images")]
        pub task_images: Vec<Image>,
        #[component(name = "pod-attachments")]
        pub pod_attachments: Vec<Attachment>,
        #[component(name = "node-attach-limits")]
        pub node_attach_limits: Vec<AttachLimit>,
    }
}

/// Contract 0.5.0's `types`: 0.6.0's, plus what a plugin said about itself
/// then (its extension points listed, not exported one by one).
pub mod types_0_5 {
    pub use super::types_0_6::*;
    use wasmtime::component::{ComponentType, Lift, Lower};

    types_instance!("tephra:scheduler/types@0.5.0");

    /// What a plugin said about itself, its points listed.
    #[derive(ComponentType, Lift, Lower, Clone, Debug, PartialEq)]
    #[component(record)]
    pub struct PluginInfo {
        #[component(name = "name")]
        pub name: String,
        #[component(name = "version")]
        pub version: String,
        #[component(name = "contract")]
        pub contract: String,
        #[component(name = "points")]
        pub points: Vec<ExtensionPoint>,
    }

    /// The extension points as 0.5.0 and 0.4.0 list them.
    #[derive(ComponentType, Lift, Lower, Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[component(enum)]
    #[repr(u8)]
    pub enum ExtensionPoint {
        #[component(name = "queue-order")]
        QueueOrder,
        #[component(name = "job-order")]
        JobOrder,
        #[component(name = "task-order")]
        TaskOrder,
        #[component(name = "victim-queue-order")]
        VictimQueueOrder,
        #[component(name = "predicate")]
        Predicate,
        #[component(name = "node-order")]
        NodeOrder,
        #[component(name = "overused")]
        Overused,
        #[component(name = "allocatable")]
        Allocatable,
        #[component(name = "preemptive")]
        Preemptive,
        #[component(name = "job-valid")]
        JobValid,
        #[component(name = "job-ready")]
        JobReady,
        #[component(name = "job-pipelined")]
        JobPipelined,
        #[component(name = "job-enqueueable")]
        JobEnqueueable,
        #[component(name = "job-enqueued")]
        JobEnqueued,
        #[component(name = "job-starving")]
        JobStarving,
        #[component(name = "preemptable")]
        Preemptable,
        #[component(name = "reclaimable")]
        Reclaimable,
        #[component(name = "victim-tasks")]
        VictimTasks,
        #[component(name = "target-job")]
        TargetJob,
        #[component(name = "reserved-nodes")]
        ReservedNodes,
        #[component(name = "queue-status")]
        QueueStatus,
        #[component(name = "events")]
        Events,
    }
}

/// Contract 0.4.0's `types`: 0.5.0's without the placement rules (pod
/// labels, terms, ports, spread, images, attachments, residents) and with
/// required node affinity only.
pub mod types_0_4 {
    pub use super::types_0_5::*;
    use wasmtime::component::{ComponentType, Lift, Lower};

    types_instance!("tephra:scheduler/types@0.4.0");

    #[derive(ComponentType, Lift, Lower, Clone, Debug, PartialEq)]
    #[component(record)]
    pub struct Snapshot {
        #[component(name = "dims")]
        pub dims: Vec<String>,
        #[component(name = "strings")]
        pub strings: Vec<String>,
        #[component(name = "total")]
        pub total: Vec<f64>,
        #[component(name = "now-ms")]
        pub now_ms: i64,
        #[component(name = "node-allocatable")]
        pub node_allocatable: Vec<f64>,
        #[component(name = "node-used")]
        pub node_used: Vec<f64>,
        #[component(name = "node-releasing")]
        pub node_releasing: Vec<f64>,
        #[component(name = "node-pipelined")]
        pub node_pipelined: Vec<f64>,
        #[component(name = "node-unschedulable")]
        pub node_unschedulable: Vec<bool>,
        #[component(name = "node-labels")]
        pub node_labels: Vec<Label>,
        #[component(name = "node-taints")]
        pub node_taints: Vec<Taint>,
        #[component(name = "node-locked-job")]
        pub node_locked_job: Vec<u32>,
        #[component(name = "node-locked-queue")]
        pub node_locked_queue: Vec<u32>,
        #[component(name = "queue-parent")]
        pub queue_parent: Vec<u32>,
        #[component(name = "queue-weight")]
        pub queue_weight: Vec<f64>,
        #[component(name = "queue-priority")]
        pub queue_priority: Vec<i32>,
        #[component(name = "queue-reclaimable")]
        pub queue_reclaimable: Vec<bool>,
        #[component(name = "queue-state")]
        pub queue_state: Vec<QueueState>,
        #[component(name = "queue-capability")]
        pub queue_capability: Vec<Quantity>,
        #[component(name = "queue-deserved")]
        pub queue_deserved: Vec<Quantity>,
        #[component(name = "queue-guarantee")]
        pub queue_guarantee: Vec<Quantity>,
        #[component(name = "queue-annotations")]
        pub queue_annotations: Vec<Label>,
        #[component(name = "queue-affinity")]
        pub queue_affinity: Vec<Label>,
        #[component(name = "queue-guaranteed")]
        pub queue_guaranteed: Vec<bool>,
        #[component(name = "queue-reserve-percentage")]
        pub queue_reserve_percentage: Vec<Quantity>,
        #[component(name = "job-queue")]
        pub job_queue: Vec<u32>,
        #[component(name = "job-min-available")]
        pub job_min_available: Vec<u32>,
        #[component(name = "job-has-min-resources")]
        pub job_has_min_resources: Vec<bool>,
        #[component(name = "job-min-resources")]
        pub job_min_resources: Vec<Quantity>,
        #[component(name = "job-min-task-member")]
        pub job_min_task_member: Vec<RoleMin>,
        #[component(name = "job-priority")]
        pub job_priority: Vec<i32>,
        #[component(name = "job-phase")]
        pub job_phase: Vec<JobPhase>,
        #[component(name = "job-created-ms")]
        pub job_created_ms: Vec<i64>,
        #[component(name = "job-annotations")]
        pub job_annotations: Vec<Label>,
        #[component(name = "reservation-targets")]
        pub reservation_targets: Vec<u32>,
        #[component(name = "task-job")]
        pub task_job: Vec<u32>,
        #[component(name = "task-status")]
        pub task_status: Vec<TaskStatus>,
        #[component(name = "task-node")]
        pub task_node: Vec<u32>,
        #[component(name = "task-resreq")]
        pub task_resreq: Vec<f64>,
        #[component(name = "task-priority")]
        pub task_priority: Vec<i32>,
        #[component(name = "task-preemptable")]
        pub task_preemptable: Vec<bool>,
        #[component(name = "task-role")]
        pub task_role: Vec<u32>,
        #[component(name = "task-namespace")]
        pub task_namespace: Vec<u32>,
        #[component(name = "task-priority-class")]
        pub task_priority_class: Vec<u32>,
        #[component(name = "task-created-ms")]
        pub task_created_ms: Vec<i64>,
        #[component(name = "task-started-ms")]
        pub task_started_ms: Vec<i64>,
        #[component(name = "task-estimated-ms")]
        pub task_estimated_ms: Vec<i64>,
        #[component(name = "task-node-selector")]
        pub task_node_selector: Vec<Label>,
        #[component(name = "task-tolerations")]
        pub task_tolerations: Vec<Toleration>,
        #[component(name = "task-affinity")]
        pub task_affinity: Vec<AffinityExpr>,
    }

    #[derive(ComponentType, Lift, Lower, Clone, Debug, PartialEq)]
    #[component(record)]
    pub struct SnapshotDelta {
        #[component(name = "now-ms")]
        pub now_ms: i64,
        #[component(name = "tasks")]
        pub tasks: Vec<u32>,
        #[component(name = "task-status")]
        pub task_status: Vec<TaskStatus>,
        #[component(name = "task-node")]
        pub task_node: Vec<u32>,
        #[component(name = "task-started-ms")]
        pub task_started_ms: Vec<i64>,
        #[component(name = "nodes")]
        pub nodes: Vec<u32>,
        #[component(name = "node-used")]
        pub node_used: Vec<f64>,
        #[component(name = "node-releasing")]
        pub node_releasing: Vec<f64>,
        #[component(name = "node-pipelined")]
        pub node_pipelined: Vec<f64>,
        #[component(name = "node-locked-job")]
        pub node_locked_job: Vec<u32>,
        #[component(name = "node-locked-queue")]
        pub node_locked_queue: Vec<u32>,
        #[component(name = "job-phase")]
        pub job_phase: Vec<JobPhase>,
        #[component(name = "reservation-targets")]
        pub reservation_targets: Vec<u32>,
    }

    #[derive(ComponentType, Lift, Lower, Clone, Debug, PartialEq)]
    #[component(record)]
    pub struct AffinityExpr {
        #[component(name = "task")]
        pub task: u32,
        #[component(name = "term")]
        pub term: u32,
        #[component(name = "key")]
        pub key: u32,
        #[component(name = "operator")]
        pub operator: u32,
        #[component(name = "values")]
        pub values: Vec<u32>,
    }
}

/// `$to { f: $from.f.clone(), ... }` for the fields named once, then the rest.
macro_rules! copied {
    ($from:ident => $($to:ident)::+ { $($f:ident),* $(,)? } $($rest:tt)*) => {
        $($to)::+ { $($f: $from.$f.clone(),)* $($rest)* }
    };
}

/// The 0.4.0 snapshot of a current one: what 0.4.0 had, copied.
pub fn snapshot_0_4(s: &current::Snapshot) -> types_0_4::Snapshot {
    // 0.4.0 knew the pod's own required terms only.
    let task_affinity = s
        .task_affinity
        .iter()
        .filter(|e| e.group == 0 && e.weight == 0 && !e.field)
        .map(|e| types_0_4::AffinityExpr {
            task: e.task,
            term: e.term,
            key: e.key,
            operator: e.operator,
            values: e.values.clone(),
        })
        .collect();
    copied!(s => types_0_4::Snapshot {
        dims, strings, total, now_ms, node_allocatable, node_used, node_releasing, node_pipelined,
        node_unschedulable, node_labels, node_taints, node_locked_job, node_locked_queue, queue_parent,
        queue_weight, queue_priority, queue_reclaimable, queue_state, queue_capability, queue_deserved,
        queue_guarantee, queue_annotations, queue_affinity, queue_guaranteed, queue_reserve_percentage,
        job_queue, job_min_available, job_has_min_resources, job_min_resources, job_min_task_member,
        job_priority, job_phase, job_created_ms, job_annotations, reservation_targets, task_job, task_status,
        task_node, task_resreq, task_priority, task_preemptable, task_role, task_namespace,
        task_priority_class, task_created_ms, task_started_ms, task_estimated_ms, task_node_selector,
        task_tolerations
    } task_affinity)
}

/// The 0.4.0 delta of a current one (residents did not exist).
pub fn delta_0_4(d: &current::SnapshotDelta) -> types_0_4::SnapshotDelta {
    copied!(d => types_0_4::SnapshotDelta {
        now_ms, tasks, task_status, task_node, task_started_ms, nodes, node_used, node_releasing,
        node_pipelined, node_locked_job, node_locked_queue, job_phase, reservation_targets
    })
}

/// The 0.6.0 snapshot of a current one: all but the topology.
pub fn snapshot_0_6(s: &current::Snapshot) -> types_0_6::Snapshot {
    copied!(s => types_0_6::Snapshot { dims, strings, total, now_ms, node_name, node_allocatable, node_used, node_releasing, node_pipelined, node_unschedulable, node_labels, node_taints, node_locked_job, node_locked_queue, queue_parent, queue_weight, queue_priority, queue_reclaimable, queue_state, queue_capability, queue_deserved, queue_guarantee, queue_annotations, queue_affinity, queue_guaranteed, queue_reserve_percentage, job_queue, job_min_available, job_has_min_resources, job_min_resources, job_min_task_member, job_priority, job_phase, job_created_ms, job_annotations, reservation_targets, task_job, task_status, task_node, task_resreq, task_priority, task_preemptable, task_role, task_namespace, task_priority_class, task_created_ms, task_started_ms, task_estimated_ms, task_node_selector, task_tolerations, task_affinity, resident_node, resident_namespace, pod_labels, pod_terms, pod_ports, task_spread, node_images, task_images, pod_attachments, node_attach_limits })
}

/// What a 0.5.0 or 0.4.0 plugin said about itself, as the host keeps it.
pub fn info_0_5(i: types_0_5::PluginInfo) -> crate::PluginInfo {
    use crate::ExtensionPoint as P;
    use types_0_5::ExtensionPoint as L;
    let points = i
        .points
        .into_iter()
        .map(|p| match p {
            L::QueueOrder => P::QueueOrder,
            L::JobOrder => P::JobOrder,
            L::TaskOrder => P::TaskOrder,
            L::VictimQueueOrder => P::VictimQueueOrder,
            L::Predicate => P::Predicate,
            L::NodeOrder => P::NodeOrder,
            L::Overused => P::Overused,
            L::Allocatable => P::Allocatable,
            L::Preemptive => P::Preemptive,
            L::JobValid => P::JobValid,
            L::JobReady => P::JobReady,
            L::JobPipelined => P::JobPipelined,
            L::JobEnqueueable => P::JobEnqueueable,
            L::JobEnqueued => P::JobEnqueued,
            L::JobStarving => P::JobStarving,
            L::Preemptable => P::Preemptable,
            L::Reclaimable => P::Reclaimable,
            L::VictimTasks => P::VictimTasks,
            L::TargetJob => P::TargetJob,
            L::ReservedNodes => P::ReservedNodes,
            L::QueueStatus => P::QueueStatus,
            L::Events => P::Events,
        })
        .collect();
    crate::PluginInfo { name: i.name, version: i.version, contract: i.contract, points }
}
