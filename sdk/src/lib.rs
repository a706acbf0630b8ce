//! The Rust SDK for tephra scheduling policies.
//!
//! A policy is a type implementing [`Policy`]; [`export_plugin!`] turns it into
//! the `tephra:scheduler/policy` export of a WebAssembly component. The SDK
//! keeps the session snapshot in columnar form ([`Session`]), applies the
//! host's allocate/deallocate events to it, and batches per-node answers, so a
//! policy only writes the decisions.
//!
//! Policy logic is plain Rust over [`Session`]: unit tests build a snapshot
//! with [`SnapshotBuilder`] and run natively, without a Wasm build.

#[cfg(any(all(target_arch = "wasm32", feature = "block-cache"), test))]
mod alloc;
pub mod args;
pub mod log;
pub mod nodes;
pub mod pods;
mod policy;
pub mod resource;
mod runtime;
mod session;
mod testing;

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "plugin",
        path: "../wit",
        pub_export_macro: true,
        export_macro_name: "__export_policy_bindings",
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
pub use policy::{Fits, Policy, Unfit};
pub use runtime::Runtime;
pub use session::{is_allocated, node_share, Session, NONE};
pub use testing::{delta, SnapshotBuilder};
pub use types::{Event, EventKind, ExtensionPoint, JobPhase, LockOwner, QueueState, TaskStatus, Vote};

/// The contract version this SDK implements.
pub const CONTRACT: &str = "0.5.0";

/// Exports a [`Policy`] type as the component's `policy` interface.
///
/// ```ignore
/// #[derive(Default)]
/// struct Priority;
/// impl tephra_sdk::Policy for Priority { /* ... */ }
/// tephra_sdk::export_plugin!(Priority);
/// ```
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        struct __TephraExport;

        thread_local! {
            static __TEPHRA_RUNTIME: ::core::cell::RefCell<$crate::Runtime<$plugin>> =
                ::core::cell::RefCell::new($crate::Runtime::default());
        }

        fn __tephra<R>(f: impl FnOnce(&mut $crate::Runtime<$plugin>) -> R) -> R {
            __TEPHRA_RUNTIME.with(|rt| f(&mut rt.borrow_mut()))
        }

        impl $crate::bindings::exports::tephra::scheduler::policy::Guest for __TephraExport {
            fn info() -> $crate::types::PluginInfo {
                $crate::Runtime::<$plugin>::info()
            }
            fn open_session(
                snapshot: $crate::types::Snapshot,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::core::result::Result<(), ::std::string::String> {
                __tephra(|rt| rt.open_session(snapshot, arguments))
            }
            fn update_session(
                delta: $crate::types::SnapshotDelta,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::core::result::Result<bool, ::std::string::String> {
                __tephra(|rt| rt.update_session(&delta, arguments))
            }
            fn close_session() {
                __tephra(|rt| rt.close_session())
            }
            fn on_events(events: ::std::vec::Vec<$crate::types::Event>) {
                __tephra(|rt| rt.on_events(&events))
            }
            fn on_event(event: $crate::types::Event) {
                __tephra(|rt| rt.on_events(&[event]))
            }
            fn queue_order(queues: ::std::vec::Vec<u32>) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.queue_order(&queues))
            }
            fn job_order(jobs: ::std::vec::Vec<u32>) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.job_order(&jobs))
            }
            fn task_order(tasks: ::std::vec::Vec<u32>) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.task_order(&tasks))
            }
            fn victim_queue_order(queues: ::std::vec::Vec<u32>, preemptor_queue: u32) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.victim_queue_order(&queues, preemptor_queue))
            }
            fn predicate(task: u32, nodes: ::std::vec::Vec<u32>) -> $crate::types::Fit {
                __tephra(|rt| rt.predicate(task, &nodes))
            }
            fn node_order(task: u32, nodes: ::std::vec::Vec<u32>) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.node_order(task, &nodes))
            }
            fn predicate_node(task: u32, node: u32) -> u32 {
                __tephra(|rt| rt.predicate_node(task, node))
            }
            fn explain(code: u32) -> $crate::types::Reason {
                __tephra(|rt| rt.explain(code))
            }
            fn node_score(task: u32, node: u32) -> f64 {
                __tephra(|rt| rt.node_score(task, node))
            }
            fn overused(queue: u32) -> bool {
                __tephra(|rt| rt.overused(queue))
            }
            fn allocatable(queue: u32, task: u32) -> bool {
                __tephra(|rt| rt.allocatable(queue, task))
            }
            fn preemptive(queue: u32, task: u32) -> bool {
                __tephra(|rt| rt.preemptive(queue, task))
            }
            fn job_valid(job: u32) -> ::core::option::Option<::std::string::String> {
                __tephra(|rt| rt.job_valid(job))
            }
            fn job_ready(job: u32) -> bool {
                __tephra(|rt| rt.job_ready(job))
            }
            fn job_pipelined(job: u32) -> $crate::types::Vote {
                __tephra(|rt| rt.job_pipelined(job))
            }
            fn job_enqueueable(job: u32) -> $crate::types::Vote {
                __tephra(|rt| rt.job_enqueueable(job))
            }
            fn job_enqueued(job: u32) {
                __tephra(|rt| rt.job_enqueued(job))
            }
            fn job_starving(job: u32) -> bool {
                __tephra(|rt| rt.job_starving(job))
            }
            fn preemptable(preemptor: u32, candidates: ::std::vec::Vec<u32>) -> $crate::types::Victims {
                __tephra(|rt| rt.preemptable(preemptor, &candidates))
            }
            fn reclaimable(preemptor: u32, candidates: ::std::vec::Vec<u32>) -> $crate::types::Victims {
                __tephra(|rt| rt.reclaimable(preemptor, &candidates))
            }
            fn victim_tasks(candidates: ::std::vec::Vec<u32>) -> ::std::vec::Vec<u32> {
                __tephra(|rt| rt.victim_tasks(&candidates))
            }
            fn target_job(jobs: ::std::vec::Vec<u32>) -> ::core::option::Option<u32> {
                __tephra(|rt| rt.target_job(&jobs))
            }
            fn reserved_nodes(
                owner: $crate::types::LockOwner,
                candidates: ::std::vec::Vec<u32>,
            ) -> ::core::result::Result<::std::vec::Vec<u32>, ::std::string::String> {
                __tephra(|rt| rt.reserved_nodes(owner, &candidates))
            }
            fn queue_status(queues: ::std::vec::Vec<u32>) -> $crate::types::QueueFigures {
                __tephra(|rt| rt.queue_status(&queues))
            }
        }

        $crate::bindings::__export_policy_bindings!(__TephraExport with_types_in $crate::bindings);
    };
}
