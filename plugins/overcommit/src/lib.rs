//! Overcommit: admits a job at enqueue only while the minResources of every
//! admitted job fit the cluster's capacity scaled by a factor (Volcano's
//! `overcommit` plugin, reference §8.11).
//!
//! Arguments: `overcommit-factor` (default 1.2) and, as in current Volcano,
//! optional per-dimension `overcommit-factor.<dim>`; factors below 1 become 1.2.

use tephra_sdk::resource::{self, PODS};
use tephra_sdk::{log, Args, ExtensionPoint as P, JobPhase, Policy, Session, Vote};

const FACTOR: &str = "overcommit-factor";
const DEFAULT_FACTOR: f64 = 1.2;

#[derive(Default)]
pub struct Overcommit {
    /// `total × factor − Σ node used`; negative when the cluster is overused.
    idle: Vec<f64>,
    /// Per dimension: the factor, and Σ node used (for reasons).
    factors: Vec<f64>,
    used: Vec<f64>,
    /// minResources of admitted jobs not yet covered by their allocations.
    inqueue: Vec<f64>,
}

fn factor(args: &Args, key: &str, default: f64) -> Result<f64, String> {
    let f = args.f64(key, default)?;
    Ok(if f < 1.0 { DEFAULT_FACTOR } else { f })
}

impl Policy for Overcommit {
    const NAME: &'static str = "overcommit";
    const POINTS: &'static [P] = &[P::JobEnqueueable, P::JobEnqueued];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        let base = factor(args, FACTOR, DEFAULT_FACTOR)?;
        self.idle = s.total().to_vec();
        self.factors = Vec::with_capacity(s.dims());
        for (x, dim) in self.idle.iter_mut().zip(&s.snap.dims) {
            let f = factor(args, &format!("{FACTOR}.{dim}"), base)?;
            *x *= f;
            self.factors.push(f);
        }
        self.used = vec![0.0; s.dims()];
        for n in 0..s.nodes() as u32 {
            resource::sub(&mut self.idle, s.node_used(n));
            resource::add(&mut self.used, s.node_used(n));
        }
        self.inqueue = vec![0.0; s.dims()];
        for j in 0..s.jobs() as u32 {
            let Some(min) = s.job_min_resources(j) else {
                continue;
            };
            match s.job_phase(j) {
                JobPhase::Inqueue => resource::add(&mut self.inqueue, min),
                // A Running gang still reserves what its allocations don't cover;
                // below minMember it is not counted at all (Volcano's quirk).
                JobPhase::Running if s.job_allocated_tasks[j as usize] >= s.job_min_available(j) => {
                    for ((q, m), a) in self.inqueue.iter_mut().zip(min).zip(s.job_allocated(j)) {
                        *q += (m - a).max(0.0);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Permit iff `inqueue + minReq ≤ idle` on every dimension minReq asks for;
    /// `pods` is not compared (Volcano keeps it outside the resource vector).
    fn job_enqueueable(&mut self, s: &Session, j: u32) -> Vote {
        let Some(min) = s.job_min_resources(j) else {
            return Vote::Permit;
        };
        let short = min
            .iter()
            .enumerate()
            .find(|&(d, &m)| d != PODS && m > 0.0 && !resource::less_equal(&[self.inqueue[d] + m], &[self.idle[d]]));
        let Some((d, &m)) = short else {
            return Vote::Permit;
        };
        let (dim, show) = (&s.snap.dims[d], |v: f64| resource::show(&s.snap.dims[d], v));
        let total = s.total()[d];
        log::why(&format!(
            "needs {dim} {}; the cluster can admit {} ({dim} allocatable {} × overcommit factor {} − used {} − held by admitted jobs {})",
            show(m),
            show((self.idle[d] - self.inqueue[d]).max(0.0)),
            show(total),
            self.factors[d],
            show(self.used[d]),
            show(self.inqueue[d]),
        ));
        Vote::Reject
    }

    fn job_enqueued(&mut self, s: &Session, j: u32) {
        if let Some(min) = s.job_min_resources(j) {
            resource::add(&mut self.inqueue, min);
        }
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Overcommit: job_enqueueable, job_enqueued);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::types::Quantity;
    use tephra_sdk::{SnapshotBuilder, TaskStatus, NONE};

    const GI: f64 = 1024.0 * 1024.0 * 1024.0;

    fn min_resources(b: &mut SnapshotBuilder, j: u32, min: &[f64]) {
        b.snap.job_has_min_resources[j as usize] = true;
        for (d, &value) in min.iter().enumerate() {
            b.snap.job_min_resources.push(Quantity { owner: j, dim: d as u32, value });
        }
    }

    fn open(s: &Session, args: &[(&str, &str)]) -> Overcommit {
        let mut p = Overcommit::default();
        let args = args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        p.open(s, &Args::from_pairs(args)).unwrap();
        p
    }

    /// Conformance scenario `overcommit-huge-minresources-rejected` and its siblings:
    /// nodes 2 CPU/4Gi + 4 CPU/16Gi, so idle = 7.2 CPU at factor 1.2.
    fn scenario(min: Option<&[f64]>, factor: &str) -> Vote {
        let mut b = SnapshotBuilder::new(&[]);
        b.node(&[2000.0, 4.0 * GI]);
        b.node(&[4000.0, 16.0 * GI]);
        let q = b.queue(1.0);
        let pg2 = b.job(q, 2);
        if let Some(min) = min {
            min_resources(&mut b, pg2, min);
        }
        let s = b.build();
        open(&s, &[(FACTOR, factor)]).job_enqueueable(&s, pg2)
    }

    #[test]
    fn huge_minresources_rejected() {
        assert_eq!(scenario(Some(&[20000.0, 20e9]), "1.2"), Vote::Reject);
    }

    #[test]
    fn scenario_siblings() {
        // The Inqueue job's own minResources already count once: 2 + 2 CPU ≤ 7.2.
        assert_eq!(scenario(Some(&[2000.0, 2e9]), "1.2"), Vote::Permit);
        assert_eq!(scenario(Some(&[2000.0, 2e9]), "0.8"), Vote::Permit);
        assert_eq!(scenario(None, "1.2"), Vote::Permit);
        // 3.6 + 3.6 = 7.2 ≤ 7.2 at factor 1.2, but not at factor 1.0.
        assert_eq!(scenario(Some(&[3600.0]), "1.2"), Vote::Permit);
        assert_eq!(scenario(Some(&[3600.0]), "1.0"), Vote::Reject);
        // A factor below 1 is reset to 1.2, not kept.
        assert_eq!(scenario(Some(&[3600.0]), "0.5"), Vote::Permit);
    }

    #[test]
    fn idle_subtracts_node_usage_and_may_go_negative() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[1000.0, 1e9, 10.0]);
        let q = b.queue(1.0);
        let running = b.job(q, 1);
        b.snap.job_phase[running as usize] = JobPhase::Running;
        b.task(running, &[1000.0, 1e9], TaskStatus::Running, n);
        // Pipelined tasks are not node usage.
        b.task(running, &[1000.0], TaskStatus::Pipelined, n);
        let small = b.job(q, 1);
        b.snap.job_phase[small as usize] = JobPhase::Pending;
        min_resources(&mut b, small, &[200.0]);
        let big = b.job(q, 1);
        b.snap.job_phase[big as usize] = JobPhase::Pending;
        min_resources(&mut b, big, &[300.0]);
        let s = b.build();
        let mut p = open(&s, &[]);
        assert!((p.idle[0] - 200.0).abs() < 1e-6);
        assert_eq!(p.job_enqueueable(&s, small), Vote::Permit);
        assert_eq!(p.job_enqueueable(&s, big), Vote::Reject);
        // 1 GB × 1.2 − 1 GB: memory is idle even though cpu is short.
        assert!(p.idle[1] > 0.0);

        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[1000.0]);
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        b.task(j, &[3000.0], TaskStatus::Running, n);
        let s = b.build();
        assert!((open(&s, &[]).idle[0] + 1800.0).abs() < 1e-6);
    }

    #[test]
    fn only_requested_dimensions_are_compared() {
        let mut b = SnapshotBuilder::new(&["nvidia.com/gpu"]);
        let n = b.node(&[4000.0, 1e9, 10.0, 0.0]);
        let q = b.queue(1.0);
        let hog = b.job(q, 1);
        b.task(hog, &[0.0, 2e9], TaskStatus::Running, n);
        let cpu_only = b.job(q, 1);
        b.snap.job_phase[cpu_only as usize] = JobPhase::Pending;
        // Memory is overused and pods exceed idle pods, but only cpu is asked for.
        min_resources(&mut b, cpu_only, &[1000.0, 0.0, 100.0]);
        let gpu = b.job(q, 1);
        b.snap.job_phase[gpu as usize] = JobPhase::Pending;
        min_resources(&mut b, gpu, &[1000.0, 0.0, 0.0, 1000.0]);
        let s = b.build();
        let mut p = open(&s, &[]);
        assert_eq!(p.job_enqueueable(&s, cpu_only), Vote::Permit);
        assert_eq!(p.job_enqueueable(&s, gpu), Vote::Reject);
    }

    #[test]
    fn per_dimension_factor() {
        let mut b = SnapshotBuilder::new(&[]);
        b.node(&[1000.0, 1e9]);
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        b.snap.job_phase[j as usize] = JobPhase::Pending;
        min_resources(&mut b, j, &[1500.0]);
        let s = b.build();
        assert_eq!(open(&s, &[]).job_enqueueable(&s, j), Vote::Reject);
        let mut p = open(&s, &[("overcommit-factor.cpu", "2")]);
        assert_eq!(p.job_enqueueable(&s, j), Vote::Permit);
        assert!((p.idle[1] - 1.2e9).abs() < 1.0);
        let mut p = open(&s, &[(FACTOR, "1"), ("overcommit-factor.cpu", "0.9")]);
        assert_eq!(p.job_enqueueable(&s, j), Vote::Reject);
        let mut bad = Overcommit::default();
        let args = Args::from_pairs(vec![(FACTOR.into(), "lots".into())]);
        assert!(bad.open(&s, &args).is_err());
    }

    #[test]
    fn enqueued_jobs_consume_idle() {
        let mut b = SnapshotBuilder::new(&[]);
        b.node(&[1000.0]);
        let q = b.queue(1.0);
        let jobs: Vec<u32> = (0..3)
            .map(|_| {
                let j = b.job(q, 1);
                b.snap.job_phase[j as usize] = JobPhase::Pending;
                min_resources(&mut b, j, &[500.0]);
                j
            })
            .collect();
        let s = b.build();
        let mut p = open(&s, &[]);
        assert_eq!(p.job_enqueueable(&s, jobs[0]), Vote::Permit);
        p.job_enqueued(&s, jobs[0]);
        assert_eq!(p.job_enqueueable(&s, jobs[1]), Vote::Permit);
        p.job_enqueued(&s, jobs[1]);
        // 1000 + 500 > 1200.
        assert_eq!(p.job_enqueueable(&s, jobs[2]), Vote::Reject);
    }

    #[test]
    fn running_jobs_reserve_their_unallocated_minimum() {
        let build = |allocated: usize| {
            let mut b = SnapshotBuilder::new(&[]);
            let n = b.node(&[10000.0]);
            let q = b.queue(1.0);
            let r = b.job(q, 2);
            b.snap.job_phase[r as usize] = JobPhase::Running;
            min_resources(&mut b, r, &[6000.0]);
            for i in 0..3 {
                let (status, node) = if i < allocated { (TaskStatus::Running, n) } else { (TaskStatus::Pending, NONE) };
                b.task(r, &[1000.0], status, node);
            }
            // Succeeded tasks are not allocated.
            b.task(r, &[1000.0], TaskStatus::Succeeded, NONE);
            b.build()
        };
        // Two allocated (≥ minMember): reserves 6000 − 2000.
        assert!((open(&build(2), &[]).inqueue[0] - 4000.0).abs() < 1e-6);
        // One allocated (< minMember): reserves nothing.
        assert_eq!(open(&build(1), &[]).inqueue[0], 0.0);
        // Allocations beyond minResources never make the reservation negative.
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[10000.0, 1e9]);
        let q = b.queue(1.0);
        let r = b.job(q, 1);
        b.snap.job_phase[r as usize] = JobPhase::Running;
        min_resources(&mut b, r, &[500.0, 1e6]);
        b.task(r, &[1000.0], TaskStatus::Running, n);
        let s = b.build();
        assert_eq!(open(&s, &[]).inqueue[..2], [0.0, 1e6]);
    }
}
