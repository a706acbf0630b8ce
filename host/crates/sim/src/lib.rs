//! The simulator: manifests replayed through scheduling cycles with a
//! minimal kubelet, Volcano's job and podgroup controllers and timed
//! arrivals ([`simulate`]), reported per cycle ([`report`]).

#![warn(missing_docs)]

pub mod estimate;
pub mod lab;
pub mod report;
pub mod simulate;
pub mod workloads;

pub use simulate::{Options, Simulation};
