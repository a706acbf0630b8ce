//! What produces the cluster model: manifests ([`manifest`]), workload
//! traces ([`trace`]), synthetic clusters ([`synthetic`]) and Volcano's
//! scheduler config ([`config`]), with the checks a cluster's objects must
//! pass together ([`validate`]).

#![warn(missing_docs)]

pub mod config;
pub mod files;
mod load;
pub mod manifest;
pub mod synthetic;
pub mod trace;
pub mod validate;

pub use load::load;
