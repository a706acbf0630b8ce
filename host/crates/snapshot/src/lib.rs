//! The columnar [`Snapshot`](tephra_contract::Snapshot) every plugin
//! receives, built from the cluster model, and its cache.
//!
//! [`build`] makes a snapshot from a cluster; [`cache`] keeps the last one
//! so the next session settles what moved instead of building anew. The
//! names and host-side facts a session keeps beside the snapshot are in
//! [`Names`] and [`Extra`].

#![warn(missing_docs)]

mod basis;
pub mod cache;
mod extra;
pub mod fuzzing;
mod names;
mod rules;
mod snapshot;
mod topology;

pub use basis::{Basis, Marks, Storage};
pub use extra::Extra;
pub use names::{NameMap, Names, CLASSLESS, NONE};
pub use rules::{classless, rising, volatile, LabelKeys};
pub use snapshot::*;
pub use tephra_contract::empty_snapshot;
pub use tephra_model::node::selects;
