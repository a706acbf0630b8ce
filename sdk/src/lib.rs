//! The Rust SDK for tephra scheduling policies.
//!
//! A policy is a type implementing [`Policy`]; [`export_plugin!`] turns it into
//! a WebAssembly component exporting `tephra:scheduler/session` and the
//! interfaces of the extension points it implements. The SDK
//! keeps the session snapshot in columnar form ([`Session`]), applies the
//! host's allocate/deallocate events to it, and batches per-node answers, so a
//! policy only writes the decisions.
//!
//! Policy logic is plain Rust over [`Session`]: unit tests build a snapshot
//! with [`SnapshotBuilder`] and run natively, without a Wasm build.

// A global allocator is `unsafe` by its trait; this is the one module of
// the SDK that needs it.
#[cfg(any(all(target_arch = "wasm32", feature = "block-cache"), test))]
#[allow(unsafe_code)]
mod alloc;
pub mod args;
#[doc(hidden)]
mod contract;
#[doc(hidden)]
pub mod export;
pub mod log;
pub mod nodes;
pub mod pods;
pub mod points;
mod policy;
pub mod resource;
mod runtime;
mod session;
mod testing;
mod views;

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "plugin",
        // The file, not the directory: earlier versions in `wit/deps` are
        // the host's business.
        path: "../wit/scheduler.wit",
        pub_export_macro: true,
        export_macro_name: "__export_session",
        default_bindings_module: "tephra_sdk::bindings",
    });
}

/// Plugins built for Wasm keep freed small blocks for reuse (see `alloc.rs`):
/// a plugin that brings its own global allocator turns feature `block-cache` off.
#[cfg(all(target_arch = "wasm32", feature = "block-cache"))]
#[global_allocator]
static ALLOCATOR: alloc::BlockCache<std::alloc::System> = alloc::BlockCache::new(std::alloc::System);

/// The contract types, as generated from `wit/scheduler.wit`.
pub mod types {
    pub use crate::bindings::tephra::scheduler::types::*;
}

pub use args::{parse_duration, Args};
pub use contract::{ExtensionPoint, CONTRACT};
pub use policy::{Fits, Policy, Unfit};
pub use runtime::Runtime;
pub use session::{is_allocated, node_share, Session, NONE};
pub use testing::{delta, SnapshotBuilder};
pub use types::{Event, EventKind, EvictionKind, JobPhase, LockOwner, QueueState, TaskStatus, Vote};
pub use views::{Amounts, HyperNodeView, JobView, NodeView, QueueView, TaskView};
