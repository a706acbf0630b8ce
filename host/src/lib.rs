//! tephra: a batch scheduler for Kubernetes whose every policy is a
//! WebAssembly component.
//!
//! The pipeline: a [`model::Cluster`] (from manifests or the API) is
//! snapshotted into a [`session::Session`]; [`actions`] run over it, asking
//! the [`policy::Policies`] dispatcher, which combines the answers of
//! [`wasm`] plugins tier by tier; [`statement::Statement`]s commit binds and
//! evictions; the [`simulate`] loop applies them like a kubelet would.

pub mod actions;
pub mod admin;
pub mod config;
pub mod conformance;
pub mod k8s;
pub mod live;
pub mod manifest;
pub mod model;
pub mod plugin;
pub mod policy;
pub mod report;
pub mod reservation;
pub mod resource;
pub mod scaffold;
pub mod scheduler;
pub mod session;
pub mod session_cache;
pub mod simulate;
pub mod statement;
pub mod synthetic;
pub mod tracked;
pub mod validate;
pub mod wasm;

/// The plugin contract version this host speaks (`wit/scheduler.wit`).
pub const CONTRACT: &str = "0.4.0";
