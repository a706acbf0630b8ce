//! Gang: a job is scheduled all or nothing, at least `minAvailable` tasks (and
//! each role's `minTaskMember`) at once (Volcano's `gang` plugin, reference §8.1).

use std::collections::HashMap;
use tephra_sdk::{is_allocated, Args, EvictionKind, ExtensionPoint as P, Policy, Session, TaskStatus, Vote};

#[derive(Default)]
pub struct Gang {
    /// Per job: (role, minTaskMember > 0). Empty when minAvailable < Σ
    /// minTaskMember, where Volcano skips the per-role checks (§2.5).
    roles: Vec<Vec<(u32, u32)>>,
    /// Per job: (subgroup policy, minSubGroups > 0).
    partitions: Vec<Vec<(u32, u32)>>,
    /// Per job, its subgroups.
    groups: Vec<Vec<u32>>,
}

/// Volcano's `ValidTaskNum` statuses.
fn is_valid(status: TaskStatus) -> bool {
    use TaskStatus::*;
    is_allocated(status) || matches!(status, Succeeded | Pipelined | Pending)
}

/// Whether a task counts for its role in CheckTaskReady (or, with
/// `pipelined`, CheckTaskPipelined): placed, or pending best-effort.
fn occupies(s: &Session, t: u32, pipelined: bool) -> bool {
    let status = s.task_status(t);
    is_allocated(status)
        || status == TaskStatus::Succeeded
        || (pipelined && status == TaskStatus::Pipelined)
        || (status == TaskStatus::Pending && s.task_best_effort(t))
}

impl Gang {
    /// The first role of `j` with fewer counted tasks than its minimum, as
    /// (role, counted, minimum).
    fn short_role(&self, s: &Session, j: u32, counts: impl Fn(u32) -> bool) -> Option<(u32, u32, u32)> {
        let roles = self.roles.get(j as usize).filter(|r| !r.is_empty())?;
        let mut n = vec![0u32; roles.len()];
        for &t in s.job_tasks(j) {
            let role = s.snap.task_role[t as usize];
            if let Some(k) = roles.iter().position(|&(r, _)| r == role) {
                n[k] += counts(t) as u32;
            }
        }
        roles.iter().zip(n).find(|&(&(_, min), c)| c < min).map(|(&(r, min), c)| (r, c, min))
    }

    /// The first subgroup policy of `j` with fewer ready subgroups (a
    /// subgroup is ready when `counts` holds for `min-available` of its
    /// tasks; with `exist`, every subgroup counts) than its minSubGroups,
    /// as (policy, counted, minimum).
    fn short_partition(
        &self,
        s: &Session,
        j: u32,
        exist: bool,
        counts: impl Fn(u32) -> bool,
    ) -> Option<(u32, u32, u32)> {
        let policies = self.partitions.get(j as usize).filter(|p| !p.is_empty())?;
        let mut held: HashMap<u32, u32> = HashMap::new();
        for &t in s.job_tasks(j) {
            let g = s.snap.task_subgroup[t as usize];
            if g != tephra_sdk::NONE {
                *held.entry(g).or_default() += counts(t) as u32;
            }
        }
        policies.iter().find_map(|&(policy, min)| {
            let n = self.groups[j as usize]
                .iter()
                .filter(|&&g| {
                    let sg = &s.snap.subgroups[g as usize];
                    sg.policy == policy && (exist || held.get(&g).copied().unwrap_or(0) >= sg.min_available)
                })
                .count() as u32;
            (n < min).then_some((policy, n, min))
        })
    }

    /// Volcano's preemptable = reclaimable function.
    fn victims(s: &Session, candidates: &[u32]) -> (Vec<u32>, Vote) {
        // Ready tasks each job may still lose, counted down as victims are taken.
        let mut left: HashMap<u32, u32> = HashMap::new();
        let victims = candidates
            .iter()
            .copied()
            .filter(|&c| {
                let j = s.task_job(c);
                let Some(&ready) = s.job_ready.get(j as usize) else {
                    return false;
                };
                let n = left.entry(j).or_insert(ready);
                let take = *n > s.job_min_available(j);
                *n -= take as u32;
                take
            })
            .collect();
        (victims, Vote::Permit)
    }
}

impl Policy for Gang {
    const NAME: &'static str = "gang";
    // Events: not a Volcano handler, but asks the host to keep the job counters current.
    const POINTS: &'static [P] = &[
        P::JobValid,
        P::Preemptable,
        P::Reclaimable,
        P::JobOrder,
        P::JobReady,
        P::JobPipelined,
        P::JobStarving,
        P::Evictable,
        P::Events,
    ];

    fn open(&mut self, s: &Session, _args: &Args) -> Result<(), String> {
        let mut roles: Vec<Vec<(u32, u32)>> = vec![Vec::new(); s.jobs()];
        for m in &s.snap.job_min_task_member {
            let Some(v) = roles.get_mut(m.job as usize) else {
                continue;
            };
            // minTaskMember is a map in the PodGroup: a repeated role overrides.
            match v.iter_mut().find(|(r, _)| *r == m.role) {
                Some(e) => e.1 = m.count,
                None => v.push((m.role, m.count)),
            }
        }
        for (j, v) in roles.iter_mut().enumerate() {
            let total: u64 = v.iter().map(|e| e.1 as u64).sum();
            if (s.snap.job_min_available[j] as u64) < total {
                v.clear();
            }
            v.retain(|e| e.1 > 0);
        }
        self.roles = roles;
        let mut partitions: Vec<Vec<(u32, u32)>> = vec![Vec::new(); s.jobs()];
        for m in s.snap.job_min_subgroups.iter().filter(|m| m.count > 0) {
            if let Some(v) = partitions.get_mut(m.job as usize) {
                v.push((m.role, m.count));
            }
        }
        self.partitions = partitions;
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); s.jobs()];
        for (g, sg) in s.snap.subgroups.iter().enumerate() {
            if let Some(v) = groups.get_mut(sg.job as usize) {
                v.push(g as u32);
            }
        }
        self.groups = groups;
        Ok(())
    }

    /// Roles come from PodGroup specs, which do not move between sessions that continue.
    fn resume(&mut self, _: &Session, _: &Args) -> Result<bool, String> {
        Ok(true)
    }

    fn job_valid(&mut self, s: &Session, j: u32) -> Option<String> {
        if let Some((role, n, min)) = self.short_role(s, j, |t| is_valid(s.task_status(t))) {
            let role = s.str(role);
            return Some(format!("NotEnoughPodsOfTask: role {role:?} has {n} valid tasks, minTaskMember {min}"));
        }
        if let Some((policy, n, min)) = self.short_partition(s, j, true, |_| true) {
            let policy = s.str(policy);
            return Some(format!("NotEnoughSubGroups: policy {policy:?} has {n} subgroups, minSubGroups {min}"));
        }
        let (valid, min) = (s.job_valid[j as usize], s.job_min_available(j));
        let tasks = s.job_tasks(j).len();
        (valid < min).then(|| format!("NotEnoughTasks: {valid}/{tasks} valid tasks, minAvailable {min}"))
    }

    fn preemptable(&mut self, s: &Session, _preemptor: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        Self::victims(s, candidates)
    }

    fn reclaimable(&mut self, s: &Session, _preemptor: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        Self::victims(s, candidates)
    }

    /// Jobs not yet ready first; role minimums are ignored here, as in Volcano.
    fn job_order(&mut self, s: &Session, j: u32) -> f64 {
        s.job_is_ready(j) as u8 as f64
    }

    fn job_ready(&mut self, s: &Session, j: u32) -> bool {
        self.short_role(s, j, |t| occupies(s, t, false)).is_none()
            && self.short_partition(s, j, false, |t| occupies(s, t, false)).is_none()
            && s.job_is_ready(j)
    }

    fn job_pipelined(&mut self, s: &Session, j: u32) -> Vote {
        if self.short_role(s, j, |t| occupies(s, t, true)).is_none()
            && self.short_partition(s, j, false, |t| occupies(s, t, true)).is_none()
            && s.job_is_pipelined(j)
        {
            Vote::Permit
        } else {
            Vote::Reject
        }
    }

    /// Gang eviction keeps gangs whole itself (bundles): every candidate.
    fn evictable(&mut self, _: &Session, _: EvictionKind, _job: u32, _hn: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        (candidates.to_vec(), Vote::Permit)
    }

    fn job_starving(&mut self, s: &Session, j: u32) -> bool {
        s.job_is_starving(j)
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(
    Gang: job_valid, preemptable, reclaimable, job_order, job_ready, job_pipelined, job_starving, evictable
);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::types::RoleMin;
    use tephra_sdk::{SnapshotBuilder, NONE};
    use TaskStatus::*;

    const CPU: &[f64] = &[1000.0];

    fn open(b: SnapshotBuilder) -> (Gang, Session) {
        let s = b.build();
        let mut g = Gang::default();
        g.open(&s, &Args::default()).unwrap();
        (g, s)
    }

    fn role(b: &mut SnapshotBuilder, job: u32, name: &str, count: u32) -> u32 {
        let r = b.string(name);
        b.snap.job_min_task_member.push(RoleMin { job, role: r, count });
        r
    }

    fn task(b: &mut SnapshotBuilder, job: u32, role: u32, status: TaskStatus, node: u32) -> u32 {
        let t = b.task(job, CPU, status, node);
        b.snap.task_role[t as usize] = role;
        t
    }

    #[test]
    fn a_resumed_session_judges_jobs_by_their_statuses_now() {
        // Two ps and two workers (minTaskMember 1 and 2, minAvailable 3); one
        // worker's status changes between the sessions.
        let cluster = |second: TaskStatus| {
            let mut b = SnapshotBuilder::new(&[]);
            let n = b.node(&[8000.0, 8e9, 110.0]);
            let q = b.queue(1.0);
            let j = b.job(q, 3);
            let (ps, worker) = (role(&mut b, j, "ps", 1), role(&mut b, j, "worker", 2));
            task(&mut b, j, ps, Running, n);
            task(&mut b, j, ps, Pending, NONE);
            task(&mut b, j, worker, Running, n);
            task(&mut b, j, worker, second, if matches!(second, Pending | Failed) { NONE } else { n });
            b.snap
        };
        let mut rt = tephra_sdk::Runtime::<Gang>::default();
        rt.open_session(cluster(Pending), vec![]).unwrap();
        let answers = |rt: &mut tephra_sdk::Runtime<Gang>| (rt.job_valid(0), rt.job_ready(0), rt.job_starving(0));
        assert_eq!(answers(&mut rt), (None, false, true));
        for second in [Running, Failed, Pending] {
            let next = cluster(second);
            assert_eq!(rt.continue_on(&next, vec![]), Ok(true));
            assert!(rt.resumed());
            let mut fresh = tephra_sdk::Runtime::<Gang>::default();
            fresh.open_session(next, vec![]).unwrap();
            assert_eq!(answers(&mut rt), answers(&mut fresh), "{second:?}");
        }
        // The last worker failed in between: the role is short.
        rt.continue_on(&cluster(Failed), vec![]).unwrap();
        assert!(rt.job_valid(0).is_some_and(|why| why.contains("worker")));
        assert!(!answers(&mut rt).1);
    }

    #[test]
    fn invalid_below_min_available() {
        let mut b = SnapshotBuilder::new(&[]);
        let q = b.queue(1.0);
        let short = b.job(q, 3);
        let full = b.job(q, 2);
        b.task(short, CPU, Pending, NONE);
        b.task(short, CPU, Failed, NONE);
        b.task(short, CPU, Unknown, NONE);
        b.task(full, CPU, Pending, NONE);
        b.task(full, CPU, Succeeded, NONE);
        let (mut g, s) = open(b);
        assert_eq!(g.job_valid(&s, short).as_deref(), Some("NotEnoughTasks: 1/3 valid tasks, minAvailable 3"));
        assert_eq!(g.job_valid(&s, full), None);
    }

    #[test]
    fn role_minimums_checked_only_when_covered_by_min_available() {
        let mut b = SnapshotBuilder::new(&[]);
        let q = b.queue(1.0);
        let checked = b.job(q, 3);
        let skipped = b.job(q, 2);
        for j in [checked, skipped] {
            let ps = role(&mut b, j, "ps", 1);
            let worker = role(&mut b, j, "worker", 2);
            task(&mut b, j, ps, Pending, NONE);
            task(&mut b, j, worker, Pending, NONE);
            task(&mut b, j, worker, Failed, NONE);
            task(&mut b, j, ps, Pending, NONE);
        }
        let (mut g, s) = open(b);
        assert_eq!(
            g.job_valid(&s, checked).as_deref(),
            Some("NotEnoughPodsOfTask: role \"worker\" has 1 valid tasks, minTaskMember 2")
        );
        // minAvailable 2 < Σ minTaskMember 3: per-role checks pass trivially.
        assert_eq!(g.job_valid(&s, skipped), None);
    }

    #[test]
    fn victims_keep_each_job_at_min_available() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[8000.0, 1e10, 110.0]);
        let q = b.queue(1.0);
        let a = b.job(q, 1);
        let c = b.job(q, 2);
        let p = b.job(q, 1);
        let a1 = b.task(a, CPU, Running, n);
        let a2 = b.task(a, CPU, Running, n);
        let a3 = b.task(a, CPU, Bound, n);
        b.task(a, CPU, Pending, NONE);
        let c1 = b.task(c, CPU, Running, n);
        let c2 = b.task(c, CPU, Running, n);
        let preemptor = b.task(p, CPU, Pending, NONE);
        let (mut g, s) = open(b);
        // Job a has 3 ready, min 1: two may go, in candidate order.
        let (v, vote) = g.preemptable(&s, preemptor, &[a3, c1, a1, c2, a2]);
        assert_eq!((v, vote), (vec![a3, a1], Vote::Permit));
        // All protected: an empty list, still Permit (the host makes the tier abstain).
        let (v, vote) = g.reclaimable(&s, preemptor, &[c1, c2]);
        assert_eq!((v, vote), (vec![], Vote::Permit));
    }

    #[test]
    fn ready_and_pipelined_need_each_role() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[8000.0, 1e10, 110.0]);
        let q = b.queue(1.0);
        let j = b.job(q, 2);
        let m = role(&mut b, j, "master", 1);
        let w = role(&mut b, j, "worker", 1);
        task(&mut b, j, w, Running, n);
        task(&mut b, j, w, Allocated, n);
        let master = task(&mut b, j, m, Pending, NONE);
        let (mut g, mut s) = open(b);
        // Two ready tasks satisfy minAvailable, but no master is placed.
        assert!(s.job_is_ready(j));
        assert!(!g.job_ready(&s, j));
        assert_eq!(g.job_pipelined(&s, j), Vote::Reject);
        assert_eq!(g.job_order(&s, j), 1.0);
        assert!(!g.job_starving(&s, j));

        s.snap.task_status[master as usize] = Pipelined;
        assert!(!g.job_ready(&s, j));
        assert_eq!(g.job_pipelined(&s, j), Vote::Permit);
    }

    #[test]
    fn pending_best_effort_counts_as_ready_but_not_against_starving() {
        let mut b = SnapshotBuilder::new(&[]);
        let q = b.queue(1.0);
        let be = b.job(q, 1);
        let plain = b.job(q, 1);
        b.task(be, &[], Pending, NONE);
        b.task(plain, CPU, Pending, NONE);
        let (mut g, s) = open(b);
        assert!(g.job_ready(&s, be));
        assert_eq!(g.job_pipelined(&s, be), Vote::Permit);
        // Quirk: ready (best-effort counts) yet starving (it does not).
        assert!(g.job_starving(&s, be));
        assert!(!g.job_ready(&s, plain));
        assert_eq!(g.job_pipelined(&s, plain), Vote::Reject);
        assert!(g.job_order(&s, plain) < g.job_order(&s, be));
    }
}
