//! One scheduling cycle: the [`session::Session`] the actions work on (the
//! snapshot, Volcano's node and job accounting, the event log that keeps
//! plugins in step), [`statement::Statement`]s that commit or discard
//! decisions together, [`reservation`] locks, and the
//! [`session::Outcome`] a closed session hands back.

#![warn(missing_docs)]

mod ask;
mod locks;
pub mod reservation;
pub mod session;
pub mod statement;
pub mod window;

pub use ask::Ask;
pub use session::{Decision, FitErrors, Outcome, Session};
