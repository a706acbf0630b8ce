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
            world: "tephra:scheduler/all-points@0.7.0",
            path: "../../../wit",
            // Snapshots built two ways are compared in tests.
            additional_derives: [PartialEq],
        });
    }

    /// Contract 0.6.0: the same points but `hypernode-order` and
    /// `evictable`, a snapshot without the topology.
    pub mod v0_6 {
        wasmtime::component::bindgen!({
            world: "tephra:scheduler/all-points@0.6.0",
            path: "../../../wit",
            with: { "tephra:scheduler/types@0.6.0": crate::legacy::types_0_6 },
        });
    }

    /// Contract 0.5.0: 0.6.0's types, one `policy` export.
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

/// The contract's types (`interface types`): snapshot, events, answers.
pub mod types {
    pub use super::bindings::current::tephra::scheduler0_7_0::types::*;
}
pub use types::*;

/// What a plugin says about itself as the host keeps it: its name in the
/// scheduler config's tiers, its version, the contract it was built against
/// and the points it implements (the interfaces it exports; listed by
/// contracts before 0.6.0).
#[derive(Clone, Debug, PartialEq)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub contract: String,
    pub points: Vec<ExtensionPoint>,
}

/// The extension points a plugin may implement (`events`: flush every
/// event batch before `close-session`).
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
    Events,
}

/// The worlds a plugin component may implement, with their host interfaces,
/// for the runtime that instantiates components.
pub mod world {
    pub use super::bindings::current::exports::tephra::scheduler0_7_0 as points;
    pub use super::bindings::current::tephra::scheduler0_7_0::host;
    pub use super::bindings::current::{AllPoints, AllPointsPre};

    /// Contract 0.6.0's world.
    pub mod v0_6 {
        pub use crate::bindings::v0_6::exports::tephra::scheduler0_6_0 as points;
        pub use crate::bindings::v0_6::tephra::scheduler0_6_0::host;
        pub use crate::bindings::v0_6::{AllPoints, AllPointsPre};
    }

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
pub const CONTRACT: &str = "0.7.0";

/// `affinity-expr` groups from this one on are claims still to be bound on
/// first consumer (the nodes where they can be), not bound volumes.
pub const BIND_GROUP: u32 = 1 << 16;

/// The `affinity-expr` group that keeps a task off nodes where its DRA
/// claims cannot be allocated.
pub const DEVICE_GROUP: u32 = 1 << 17;

/// Every contract version this host loads, newest first.
pub const SUPPORTED: [&str; 4] = [CONTRACT, "0.6.0", "0.5.0", "0.4.0"];

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
        P::HypernodeOrder => "hypernode-order",
        P::Evictable => "evictable",
        P::Events => "events",
    }
}
