//! Start-time estimates in `tephra run` (Slurm's `squeue --start`): every
//! `--estimate-every`, off the scheduling loop, the simulator runs forward
//! from a copy of the cluster with every pod running as long as its limits
//! allow ([`crate::estimate`]); each waiting PodGroup gets its predicted
//! start as the annotation [`ESTIMATED_START`] (RFC 3339), removed once it
//! runs or when nothing can be predicted.

use crate::estimate::estimate;
use crate::scheduler::{Driver, Loop, Scheduler};
use std::collections::BTreeMap;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The PodGroup annotation holding a waiting job's predicted start.
pub const ESTIMATED_START: &str = "tephra.io/estimated-start";
/// Simulated cycles an estimate looks ahead at most.
const HORIZON: usize = 100_000;

/// Per PodGroup (`namespace/name`), its predicted start (RFC 3339; `None`: none).
pub type Starts = Vec<(String, Option<String>)>;

/// Runs estimates in the background and says which annotations change.
pub struct Estimator {
    every: Duration,
    next: Instant,
    running: Option<JoinHandle<Starts>>,
    /// Per PodGroup, the value written last.
    written: BTreeMap<String, String>,
}

impl Estimator {
    /// Estimates every `every`.
    pub fn new(every: Duration) -> Self {
        Estimator { every, next: Instant::now(), running: None, written: BTreeMap::new() }
    }

    /// Starts an estimate when one is due and none runs; when one has
    /// finished, the annotations to write (`None`: remove), by PodGroup.
    pub fn tick<D: Driver>(&mut self, lp: &Loop<D>, period: f64) -> Starts {
        let mut changes = Vec::new();
        if self.running.as_ref().is_some_and(JoinHandle::is_finished) {
            if let Some(Ok(found)) = self.running.take().map(JoinHandle::join) {
                changes = self.changes(found);
            }
        }
        if self.every.is_zero() || self.running.is_some() || Instant::now() < self.next {
            return changes;
        }
        self.next = Instant::now() + self.every;
        let cluster = lp.cluster.clone();
        let (config, library) = (lp.scheduler.config.clone(), lp.scheduler.library.clone());
        let (reservations, usage) = (lp.scheduler.reservations.clone(), lp.scheduler.usage.clone());
        let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
        self.running = Some(std::thread::spawn(move || {
            let mut s = Scheduler::new(config, &library);
            s.reservations = reservations;
            s.usage = usage;
            let now = now_ms as f64 / 1000.0;
            estimate(&cluster, s, now, period, HORIZON)
                .into_iter()
                .map(|e| (e.job, e.start.map(|at| crate::manifest::format_time((at * 1000.0) as i64))))
                .collect()
        }));
        changes
    }

    /// What differs from what was written: new or moved estimates, and
    /// removals for jobs no longer waiting or without one.
    fn changes(&mut self, found: Starts) -> Starts {
        let now: BTreeMap<String, String> = found.into_iter().filter_map(|(job, at)| Some((job, at?))).collect();
        let mut out: Starts = now
            .iter()
            .filter(|(job, at)| self.written.get(*job) != Some(*at))
            .map(|(job, at)| (job.clone(), Some(at.clone())))
            .collect();
        out.extend(self.written.keys().filter(|job| !now.contains_key(*job)).map(|job| (job.clone(), None)));
        self.written = now;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_moved_and_gone_estimates_are_written() {
        let mut e = Estimator::new(Duration::ZERO);
        let s = |v: &[(&str, Option<&str>)]| -> Starts {
            v.iter().map(|(j, at)| (j.to_string(), at.map(str::to_string))).collect()
        };
        assert_eq!(
            e.changes(s(&[("a", Some("t1")), ("b", Some("t2")), ("c", None)])),
            s(&[("a", Some("t1")), ("b", Some("t2"))])
        );
        // a unchanged, b moved, c has none still, d new.
        assert_eq!(
            e.changes(s(&[("a", Some("t1")), ("b", Some("t3")), ("d", Some("t4"))])),
            s(&[("b", Some("t3")), ("d", Some("t4"))])
        );
        // b no longer has one, d is no longer waiting: both removed.
        assert_eq!(e.changes(s(&[("a", Some("t1")), ("b", None)])), s(&[("b", None), ("d", None)]));
    }
}
