//! The scheduler and its one loop: a config and a
//! [`Library`](tephra_runtime::Library) of plugin versions; each cycle opens
//! a session on the cluster, runs the configured actions and closes it
//! ([`scheduler`]), with shadows compared beside the live versions
//! ([`shadow`]). [`run`] is the loop both drivers share; [`control`] is what
//! it shares with an admin surface.

#![warn(missing_docs)]

pub mod control;
pub mod intent;
pub mod metrics;
pub mod queues;
pub mod rollout;
pub mod run;
pub mod scheduler;
pub mod shadow;
pub mod usage;

pub use intent::{Act, Actor, Declared, Intent};
pub use run::{Cycle, Driver, Loop};
pub use scheduler::{Scheduler, Stats};
pub use shadow::ShadowDiff;
pub use tephra_runtime::Library;
