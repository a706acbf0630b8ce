//! The plugin contract as the host sees it: the only host-side `bindgen!`s of
//! `wit/` (a crate of its own so that every layer above shares these types
//! and only the runtime links against the worlds), the contract versions it
//! speaks, and the extension points' names.
//!
//! The current contract (`wit/scheduler.wit`) gives the host its types. The
//! earlier versions it still loads (`wit/deps/scheduler-<version>/`) are
//! generated next to it and share every type that did not change, so only
//! what did change is converted ([`legacy`]).

mod bindings {
    /// The current contract, every extension point at once: the runtime looks
    /// each point up in a component and calls only those it exports.
    pub mod current {
        wasmtime::component::bindgen!({
            world: "tephra:scheduler/all-points@0.6.0",
            path: "../../../wit",
            // Snapshots built two ways are compared in tests.
            additional_derives: [PartialEq],
        });
    }

    /// Contract 0.5.0: the same types, one `policy` export.
    pub mod v0_5 {
        wasmtime::component::bindgen!({
            world: "tephra:scheduler/plugin@0.5.0",
            path: "../../../wit",
            with: { "tephra:scheduler/types@0.5.0": crate::legacy::types_0_5 },
        });
    }

    /// Contract 0.4.0: 0.5.0 without the placement rules in the snapshot.
    pub mod v0_4 {
        wasmtime::component::bindgen!({
            world: "tephra:scheduler/plugin@0.4.0",
            path: "../../../wit",
            with: { "tephra:scheduler/types@0.4.0": crate::legacy::types_0_4 },
        });
    }
}

pub mod legacy;

/// The contract's types (`interface types`): snapshot, events, answers; and
/// what the host knows of a plugin ([`PluginInfo`], [`ExtensionPoint`]).
pub mod types {
    pub use super::bindings::current::tephra::scheduler0_6_0::types::*;
    pub use super::legacy::types_0_5::{ExtensionPoint, PluginInfo};
}
pub use types::*;

/// The worlds a plugin component may implement, with their host interfaces,
/// for the runtime that instantiates components.
pub mod world {
    pub use super::bindings::current::exports::tephra::scheduler0_6_0 as points;
    pub use super::bindings::current::tephra::scheduler0_6_0::host;
    pub use super::bindings::current::{AllPoints, AllPointsPre};

    /// Contract 0.5.0's world.
    pub mod v0_5 {
        pub use crate::bindings::v0_5::tephra::scheduler0_5_0::host;
        pub use crate::bindings::v0_5::{Plugin, PluginPre};
    }

    /// Contract 0.4.0's world.
    pub mod v0_4 {
        pub use crate::bindings::v0_4::tephra::scheduler0_4_0::host;
        pub use crate::bindings::v0_4::{Plugin, PluginPre};
    }
}

/// The plugin contract version this host speaks (`wit/scheduler.wit`).
pub const CONTRACT: &str = "0.6.0";

/// Every contract version this host loads, newest first.
pub const SUPPORTED: [&str; 3] = [CONTRACT, "0.5.0", "0.4.0"];

/// An extension point as the WIT spells it ("node-order"); for the current
/// contract, also the name of the interface a plugin exports for it.
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
