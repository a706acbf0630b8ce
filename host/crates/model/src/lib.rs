//! The cluster as tephra sees it: its objects and their rules.
//!
//! [`cluster`] is the model a driver fills (from manifests through
//! `tephra-readers`, or from the API server's watches); [`node`],
//! [`topology`], [`window`] and [`storage`] are the parts nodes, HyperNodes,
//! advance reservations, volumes and devices (DRA, with [`cel`] selectors) bring; [`timelimit`] the rules of jobs' time limits;
//! [`resource`] and [`duration`] Kubernetes' units.

#![warn(missing_docs)]

pub mod allocation;
pub mod cel;
pub mod cluster;
pub mod devices;
pub mod duration;
pub mod node;
pub mod resource;
pub mod storage;
pub mod text;
pub mod timelimit;
pub mod topology;
pub mod tracked;
pub mod window;
