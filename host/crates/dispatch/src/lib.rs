//! The dispatcher: what a loaded plugin is to the host ([`backend`]), and
//! how the answers of the configured plugins combine, tier by tier, by
//! Volcano's rules ([`policy`]).

#![warn(missing_docs)]

pub mod backend;
pub mod fuzzing;
pub mod policy;
