//! The cluster as tephra sees it, and its snapshot.
//!
//! [`cluster`] is the model a driver fills (from manifests through
//! [`manifest`], or from the API server's watches); [`config`] is Volcano's
//! scheduler config; [`snapshot`] turns a cluster into the columnar
//! [`Snapshot`](tephra_contract::Snapshot) every plugin receives, and
//! [`cache`] keeps the last one so the next session starts from it.

pub mod cache;
pub mod cluster;
pub mod config;
pub mod files;
pub mod fuzzing;
pub mod manifest;
pub mod resource;
pub mod snapshot;
pub mod synthetic;
pub mod text;
pub mod timelimit;
pub mod topology;
pub mod trace;
pub mod tracked;
pub mod validate;
pub mod window;
