//! Conformance: pods Kubernetes must keep running are never victims — the
//! `system-cluster-critical` / `system-node-critical` priority classes and
//! everything in `kube-system` (Volcano's `conformance` plugin, reference §8.3).

use tephra_sdk::{EvictionKind, ExtensionPoint as P, Policy, Session, Vote};

const CRITICAL_CLASSES: [&str; 2] = ["system-cluster-critical", "system-node-critical"];

#[derive(Default)]
pub struct Conformance;

fn evictable(s: &Session, candidates: &[u32]) -> Vec<u32> {
    candidates
        .iter()
        .copied()
        .filter(|&t| {
            let class = s.str(s.snap.task_priority_class[t as usize]);
            let ns = s.str(s.snap.task_namespace[t as usize]);
            !CRITICAL_CLASSES.contains(&class) && ns != "kube-system"
        })
        .collect()
}

impl Policy for Conformance {
    const NAME: &'static str = "conformance";
    const POINTS: &'static [P] = &[P::Preemptable, P::Reclaimable, P::Evictable];

    fn preemptable(&mut self, s: &Session, _preemptor: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        (evictable(s, candidates), Vote::Permit)
    }

    fn reclaimable(&mut self, s: &Session, _preemptor: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        (evictable(s, candidates), Vote::Permit)
    }

    fn evictable(&mut self, s: &Session, _: EvictionKind, _job: u32, _hn: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        (evictable(s, candidates), Vote::Permit)
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Conformance: preemptable, reclaimable, evictable);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::{SnapshotBuilder, TaskStatus, NONE};

    #[test]
    fn protects_critical_and_kube_system() {
        let mut b = SnapshotBuilder::new(&[]);
        let n = b.node(&[8000.0, 8e9, 110.0]);
        let q = b.queue(1.0);
        let j = b.job(q, 1);
        let plain = b.task(j, &[1000.0], TaskStatus::Running, n);
        let critical = b.task(j, &[1000.0], TaskStatus::Running, n);
        let system = b.task(j, &[1000.0], TaskStatus::Running, n);
        let preemptor = b.task(j, &[1000.0], TaskStatus::Pending, NONE);
        let class = b.string("system-node-critical");
        b.snap.task_priority_class[critical as usize] = class;
        let ks = b.string("kube-system");
        b.snap.task_namespace[system as usize] = ks;
        let s = b.build();
        let all = [plain, critical, system];
        assert_eq!(Conformance.preemptable(&s, preemptor, &all), (vec![plain], Vote::Permit));
        assert_eq!(Conformance.reclaimable(&s, preemptor, &all), (vec![plain], Vote::Permit));
        // Only protected candidates: an empty list (its tier then abstains, §5.1).
        assert_eq!(Conformance.preemptable(&s, preemptor, &[critical]).0, Vec::<u32>::new());
    }
}
