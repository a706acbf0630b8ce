//! Priority: higher-priority tasks and jobs go first and may preempt lower ones
//! (Volcano's `priority` plugin, reference §8.2).

use tephra_sdk::{EvictionKind, ExtensionPoint as P, Policy, Session, Vote};

#[derive(Default)]
pub struct Priority;

impl Policy for Priority {
    const NAME: &'static str = "priority";
    const POINTS: &'static [P] = &[P::TaskOrder, P::JobOrder, P::Preemptable, P::JobStarving, P::Evictable];

    fn task_order(&mut self, s: &Session, t: u32) -> f64 {
        -(s.snap.task_priority[t as usize] as f64)
    }

    fn job_order(&mut self, s: &Session, j: u32) -> f64 {
        -(s.snap.job_priority[j as usize] as f64)
    }

    /// Victims: tasks of lower-priority jobs, or lower-priority tasks of the
    /// preemptor's own job. No reclaim counterpart (as in Volcano).
    fn preemptable(&mut self, s: &Session, preemptor: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        let pj = s.task_job(preemptor);
        let victims = candidates
            .iter()
            .copied()
            .filter(|&c| {
                let cj = s.task_job(c);
                if cj != pj {
                    s.snap.job_priority[cj as usize] < s.snap.job_priority[pj as usize]
                } else {
                    s.snap.task_priority[c as usize] < s.snap.task_priority[preemptor as usize]
                }
            })
            .collect();
        (victims, Vote::Permit)
    }

    /// Gang preemption takes only lower-priority jobs; gang reclaim any.
    fn evictable(
        &mut self,
        s: &Session,
        kind: EvictionKind,
        job: u32,
        _hn: u32,
        candidates: &[u32],
    ) -> (Vec<u32>, Vote) {
        let mine = s.snap.job_priority[job as usize];
        let keep = |c: &u32| kind == EvictionKind::GangReclaim || s.snap.job_priority[s.task_job(*c) as usize] < mine;
        (candidates.iter().copied().filter(keep).collect(), Vote::Permit)
    }

    /// Starving while any task is neither placed nor pipelined.
    fn job_starving(&mut self, s: &Session, j: u32) -> bool {
        let i = j as usize;
        ((s.job_ready[i] + s.job_waiting[i]) as usize) < s.job_tasks(j).len()
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Priority: task_order, job_order, preemptable, job_starving, evictable);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::{SnapshotBuilder, TaskStatus, NONE};

    #[test]
    fn preempts_only_lower_priority() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[4000.0, 1e9, 110.0]);
        let q = b.queue(1.0);
        let low = b.job(q, 1);
        let high = b.job(q, 1);
        let same = b.job(q, 1);
        b.snap.job_priority[high as usize] = 10;
        b.snap.job_priority[same as usize] = 10;
        let victim = b.task(low, &[1000.0], TaskStatus::Running, n);
        let peer = b.task(same, &[1000.0], TaskStatus::Running, n);
        let preemptor = b.task(high, &[1000.0], TaskStatus::Pending, NONE);
        let s = b.build();
        let (v, vote) = Priority.preemptable(&s, preemptor, &[victim, peer]);
        assert_eq!(v, vec![victim]);
        assert_eq!(vote, Vote::Permit);
        assert!(Priority.job_order(&s, high) < Priority.job_order(&s, low));
        assert!(Priority.job_starving(&s, high));
        assert!(!Priority.job_starving(&s, low));
    }
}
