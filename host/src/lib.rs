//! tephra: a batch scheduler for Kubernetes whose every policy is a
//! WebAssembly component.
//!
//! This crate is the facade over the layers (docs/architecture.md), bottom
//! up: the plugin [`contract`]; the cluster [`model`] with its snapshot and
//! [`session_cache`]; the [`policy`] dispatcher over plugin [`plugin`]
//! backends; the [`session`] with its [`statement`]s and [`reservation`]s;
//! the [`actions`]; the Wasm runtime ([`wasm`]); the [`scheduler`] and its
//! one loop; the drivers ([`simulate`], [`k8s`]). On top: the CLI, the
//! [`admin`] surface, and the tools [`conformance`] and [`scaffold`].
//! Each layer is its own crate under `host/crates/`, so an upward import
//! does not compile.

#![warn(missing_docs)]

pub use tephra_actions as actions;
pub use tephra_contract as contract;
pub use tephra_dispatch::{backend as plugin, policy};
pub use tephra_kube as k8s;
pub use tephra_model::{cluster as model, duration, resource, topology, tracked};
pub use tephra_readers::{config, files, load, manifest, synthetic, trace, validate};
pub use tephra_runtime as wasm;
pub use tephra_scheduler as scheduler;
pub use tephra_session::{reservation, session, statement};
pub use tephra_sim::{estimate, report, simulate};
pub use tephra_snapshot as snapshot;
pub use tephra_snapshot::cache as session_cache;

pub mod admin;
pub mod componentize;
pub mod conformance;
pub mod estimates;
pub mod lab;
pub mod scaffold;

/// The plugin contract version this host speaks (`wit/scheduler.wit`).
pub const CONTRACT: &str = tephra_contract::CONTRACT;
