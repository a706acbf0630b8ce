//! The plugin contract as the host sees it: the only host-side `bindgen!` of
//! `wit/` (a crate of its own so that every layer above shares these types
//! and only the runtime links against the world), the contract version, and
//! the extension points' names.

mod bindings {
    wasmtime::component::bindgen!({
        world: "plugin",
        path: "../../../wit",
        // Snapshots built two ways are compared in tests.
        additional_derives: [PartialEq],
    });
}

/// The contract's types (`interface types`): snapshot, events, answers.
pub use bindings::tephra::scheduler::types;
pub use types::*;

/// The world a plugin component implements, with its host interface, for
/// the runtime that instantiates components.
pub mod world {
    pub use super::bindings::tephra::scheduler::host;
    pub use super::bindings::{Plugin, PluginPre};
}

/// The plugin contract version this host speaks (`wit/scheduler.wit`).
pub const CONTRACT: &str = "0.5.0";

/// An extension point as the WIT spells it ("node-order").
pub fn point_name(p: ExtensionPoint) -> &'static str {
    use ExtensionPoint as P;
    match p {
        P::QueueOrder => "queue-order",
        P::JobOrder => "job-order",
        P::TaskOrder => "task-order",
        P::VictimQueueOrder => "victim-queue-order",
        P::Predicate => "predicate",
        P::NodeOrder => "node-order",
        P::Overused => "overused",
        P::Allocatable => "allocatable",
        P::Preemptive => "preemptive",
        P::JobValid => "job-valid",
        P::JobReady => "job-ready",
        P::JobPipelined => "job-pipelined",
        P::JobEnqueueable => "job-enqueueable",
        P::JobEnqueued => "job-enqueued",
        P::JobStarving => "job-starving",
        P::Preemptable => "preemptable",
        P::Reclaimable => "reclaimable",
        P::VictimTasks => "victim-tasks",
        P::TargetJob => "target-job",
        P::ReservedNodes => "reserved-nodes",
        P::QueueStatus => "queue-status",
        P::Events => "events",
    }
}
