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
mod points;

pub use points::{empty_snapshot, point_name, ExtensionPoint, CONTRACT};

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

/// `affinity-expr` groups from this one on are claims still to be bound on
/// first consumer (the nodes where they can be), not bound volumes.
pub const BIND_GROUP: u32 = 1 << 16;

/// The `affinity-expr` group that keeps a task off nodes where its DRA
/// claims cannot be allocated.
pub const DEVICE_GROUP: u32 = 1 << 17;

/// Every contract version this host loads, newest first.
pub const SUPPORTED: [&str; 4] = [CONTRACT, "0.6.0", "0.5.0", "0.4.0"];
