//! DRF: jobs with a smaller dominant resource share go first, and may preempt
//! tasks of jobs whose share stays at least as large (Volcano's `drf` plugin,
//! reference §8.4). With the argument `enableHierarchy` (the plugin's
//! `enableHierarchy: true` switch, as in Volcano) it is hierarchical DRF as
//! well: queues in the tree of their `volcano.sh/hierarchy` annotations are
//! ordered by it, and a queue reclaims from those it goes before
//! ([`hierarchy`]). Preemption stays flat in both modes, as in Volcano.

mod hierarchy;

use hierarchy::Tree;
use std::collections::HashMap;
use tephra_sdk::resource::{self, EPSILON};
use tephra_sdk::{is_allocated, Args, Event, ExtensionPoint as P, Policy, Session, TaskStatus, Vote};

/// Shares this close count as equal when choosing victims.
const SHARE_DELTA: f64 = 1e-6;

#[derive(Default)]
pub struct Drf {
    /// Per job, row-major: the allocation drf's share is taken of. Unlike
    /// `Session::job_allocated` it includes Pipelined tasks, because Volcano's
    /// `Statement.Pipeline` fires the allocate handler too.
    alloc: Vec<f64>,
    share: Vec<f64>,
    /// Hierarchical mode: the queue tree.
    tree: Option<Tree>,
}

/// Statuses whose request counts in the job's drf allocation within a session.
fn held(status: TaskStatus) -> bool {
    is_allocated(status) || status == TaskStatus::Pipelined
}

/// The dominant share: max over the dimensions the cluster has (total ≥ ε,
/// Volcano's `ResourceNames`), `pods` included; never below 0.
pub fn dominant_share(alloc: &[f64], total: &[f64]) -> f64 {
    alloc.iter().zip(total).filter(|&(_, &t)| t >= EPSILON).map(|(&a, &t)| resource::share(a, t)).fold(0.0, f64::max)
}

impl Drf {
    fn alloc(&self, s: &Session, j: u32) -> &[f64] {
        let d = s.dims();
        &self.alloc[j as usize * d..(j as usize + 1) * d]
    }
}

impl Policy for Drf {
    const NAME: &'static str = "drf";
    const POINTS: &'static [P] = &[P::JobOrder, P::Preemptable, P::QueueOrder, P::Reclaimable, P::Events];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        // At open, Volcano counts only tasks in AllocatedStatus, as the Session does.
        self.alloc = s.job_allocated.clone();
        self.share = (0..s.jobs() as u32).map(|j| dominant_share(self.alloc(s, j), s.total())).collect();
        self.tree = args.bool("enableHierarchy", false)?.then(|| Tree::new(s, &self.alloc));
        Ok(())
    }

    fn on_event(&mut self, s: &Session, e: &Event, old: TaskStatus) {
        // By status rather than event kind, so a transition that keeps the
        // resources held (Allocated → Binding) changes nothing.
        let sign = held(e.status) as i8 - held(old) as i8;
        let j = s.task_job(e.task);
        if sign == 0 || j as usize >= s.jobs() {
            return;
        }
        let d = s.dims();
        let row = &mut self.alloc[j as usize * d..(j as usize + 1) * d];
        row.iter_mut().zip(s.task_req(e.task)).for_each(|(a, r)| *a += sign as f64 * r);
        self.share[j as usize] = dominant_share(row, s.total());
        if let Some(tree) = &mut self.tree {
            tree.shift(j, s.task_req(e.task), sign as f64);
        }
    }

    fn job_order(&mut self, _s: &Session, j: u32) -> f64 {
        self.share[j as usize]
    }

    /// Hierarchical mode: the queue's place in the tree's order (equal keys
    /// defer to the next plugin). Flat mode: no opinion.
    fn queue_order(&mut self, _s: &Session, q: u32) -> f64 {
        self.tree.as_ref().map_or(0.0, |t| t.order_key(q))
    }

    /// Hierarchical mode: each candidate on its own is a victim when, with
    /// the reclaimer's task placed and the candidate gone, the reclaimer's
    /// queue still goes strictly before the candidate's. Flat mode: abstain
    /// (Volcano's flat drf has no reclaim function).
    fn reclaimable(&mut self, s: &Session, reclaimer: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        let Some(tree) = &self.tree else { return (Vec::new(), Vote::Abstain) };
        let lj = s.task_job(reclaimer);
        if lj as usize >= s.jobs() {
            return (Vec::new(), Vote::Permit);
        }
        let lq = s.job_queue(lj);
        let mut with = tree.clone();
        with.shift(lj, s.task_req(reclaimer), 1.0);
        let victims = candidates
            .iter()
            .copied()
            .filter(|&c| {
                let rj = s.task_job(c);
                if rj as usize >= s.jobs() {
                    return false;
                }
                let mut without = with.clone();
                without.shift(rj, s.task_req(c), -1.0);
                without.before(lq, s.job_queue(rj))
            })
            .collect();
        (victims, Vote::Permit)
    }

    /// Victims: candidates whose job, without them (and without the earlier
    /// candidates of the same job), keeps a share ≥ the preemptor's job with
    /// the preemptor placed.
    fn preemptable(&mut self, s: &Session, preemptor: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        let pj = s.task_job(preemptor);
        if pj as usize >= s.jobs() {
            return (Vec::new(), Vote::Permit);
        }
        let mut l = self.alloc(s, pj).to_vec();
        resource::add(&mut l, s.task_req(preemptor));
        let ls = dominant_share(&l, s.total());

        let mut left: HashMap<u32, Vec<f64>> = HashMap::new();
        let victims = candidates
            .iter()
            .copied()
            .filter(|&c| {
                let j = s.task_job(c);
                if j as usize >= s.jobs() {
                    return false;
                }
                let r = left.entry(j).or_insert_with(|| self.alloc(s, j).to_vec());
                resource::sub(r, s.task_req(c));
                let rs = dominant_share(r, s.total());
                ls < rs || (ls - rs).abs() <= SHARE_DELTA
            })
            .collect();
        (victims, Vote::Permit)
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Drf: job_order, preemptable, queue_order, reclaimable);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::{EventKind, Runtime, SnapshotBuilder, NONE};
    use TaskStatus::*;

    fn open(b: SnapshotBuilder) -> Runtime<Drf> {
        let mut rt = Runtime::<Drf>::default();
        rt.open_session(b.snap, vec![]).unwrap();
        rt
    }

    #[test]
    fn share_is_max_over_dims_the_cluster_has() {
        let mut b = SnapshotBuilder::new(&["nvidia.com/gpu"]);
        let n = b.node(&[4000.0, 8e9, 20.0]);
        let q = b.queue(1.0);
        let cpu = b.job(q, 1);
        let mem = b.job(q, 1);
        let pods = b.job(q, 1);
        let gpu = b.job(q, 1);
        b.task(cpu, &[2000.0, 1e9], Running, n);
        b.task(mem, &[1000.0, 4e9], Running, n);
        b.task(mem, &[0.0, 2e9], Pending, NONE);
        for _ in 0..10 {
            b.task(pods, &[10.0], Running, n);
        }
        // The cluster has no gpu (total 0): that dimension is left out, not share 1.
        b.task(gpu, &[400.0, 0.0, 0.0, 1000.0], Bound, n);
        let mut rt = open(b);
        let keys = rt.job_order(&[cpu, mem, pods, gpu]);
        assert_eq!(keys, vec![0.5, 0.5, 0.5, 0.1]);
    }

    #[test]
    fn events_move_shares_including_pipelined() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[10000.0, 1e12, 1000.0]);
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        let run = b.task(j, &[1000.0], Running, n);
        let t = b.task(j, &[2000.0], Pending, NONE);
        let mut rt = open(b);
        let ev = |kind, status| Event { kind, task: t, node: n, status };
        let key = |rt: &mut Runtime<Drf>| rt.job_order(&[j])[0];
        assert_eq!(key(&mut rt), 0.1);
        // Volcano's Pipeline fires AllocateFunc: the share grows.
        rt.on_events(&[ev(EventKind::Allocate, Pipelined)]);
        assert!((key(&mut rt) - 0.3).abs() < 1e-12);
        rt.on_events(&[ev(EventKind::Deallocate, Pending), ev(EventKind::Allocate, Allocated)]);
        assert!((key(&mut rt) - 0.3).abs() < 1e-12);
        // Still held after commit; released by eviction.
        rt.on_events(&[ev(EventKind::Allocate, Binding)]);
        assert!((key(&mut rt) - 0.3).abs() < 1e-12);
        rt.on_events(&[Event { kind: EventKind::Deallocate, task: run, node: n, status: Releasing }]);
        assert!((key(&mut rt) - 0.2).abs() < 1e-12);
    }

    #[test]
    fn victims_by_cumulative_share() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[10000.0, 1e12, 1000.0]);
        let q = b.queue(1.0);
        let p = b.job(q, 1);
        let big = b.job(q, 1);
        let small = b.job(q, 1);
        let v: Vec<u32> = (0..4).map(|_| b.task(big, &[1000.0], Running, n)).collect();
        let w = b.task(small, &[3000.0], Running, n);
        let preemptor = b.task(p, &[2000.0], Pending, NONE);
        let mut rt = open(b);
        // ls = 0.2. big: 0.3 (victim), 0.2 (equal: victim), 0.1 (kept); small: 0 (kept).
        let victims = rt.preemptable(preemptor, &[v[0], w, v[1], v[2]]);
        assert_eq!(victims.tasks, vec![v[0], v[1]]);
        assert_eq!(victims.vote, Vote::Permit);
        // Each call starts again from the jobs' allocations.
        let victims = rt.preemptable(preemptor, &[v[3]]);
        assert_eq!(victims.tasks, vec![v[3]]);
    }
}
