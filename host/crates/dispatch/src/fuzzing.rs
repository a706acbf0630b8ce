//! The fuzz target for the dispatcher's checking of plugin answers: plugins
//! whose every answer comes from the fuzzer's bytes, asked every question
//! the actions ask. Whatever they answer, the dispatcher must combine it or
//! turn it into a fault, never panic.

use crate::backend::{Answer, Backend, Call};
use crate::policy::{Policies, Slot};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tephra_contract::{
    Event, ExtensionPoint as P, Fit, LockOwner, PluginInfo, QueueFigures, Reason, Snapshot, SnapshotDelta, Victims,
    Vote,
};
use tephra_readers::config::PluginConf;
use tephra_snapshot::Names;

/// The fuzzer's bytes, read a little at a time (zeros once used up).
#[derive(Clone)]
struct Bytes(Arc<Mutex<VecDeque<u8>>>);

impl Bytes {
    fn u8(&self) -> u8 {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).pop_front().unwrap_or(0)
    }
    fn u32(&self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn f64(&self) -> f64 {
        f64::from_bits(u64::from(self.u32()) << 32 | u64::from(self.u32()))
    }
    fn len(&self) -> usize {
        usize::from(self.u8() % 8)
    }
    fn ids(&self) -> Vec<u32> {
        (0..self.len()).map(|_| self.u32() % 8).collect()
    }
    fn vote(&self) -> Vote {
        [Vote::Permit, Vote::Reject, Vote::Abstain][usize::from(self.u8() % 3)]
    }
    fn text(&self) -> String {
        (0..self.len()).map(|_| char::from(self.u8())).collect()
    }
    /// Any answer at all, of any kind: most are out of contract.
    fn answer(&self) -> Answer {
        match self.u8() % 12 {
            0 => Answer::Keys((0..self.len()).map(|_| self.f64()).collect()),
            1 => Answer::Fit(Fit {
                codes: (0..self.len()).map(|_| self.u8() % 4).collect(),
                reasons: (0..self.len())
                    .map(|_| Reason { message: self.text(), unresolvable: self.u8() & 1 == 1 })
                    .collect(),
            }),
            2 => Answer::Verdict((self.u8() & 1 == 1).then(|| (self.text().into(), self.u8() & 1 == 1))),
            3 => Answer::Bool(self.u8() & 1 == 1),
            4 => Answer::Vote(self.vote()),
            5 => Answer::Invalid((self.u8() & 1 == 1).then(|| self.text())),
            6 => Answer::Victims(Victims { tasks: self.ids(), vote: self.vote() }),
            7 => Answer::Ids(self.ids()),
            8 => Answer::Reserved(if self.u8() & 1 == 1 { Ok(self.ids()) } else { Err(self.text()) }),
            9 => Answer::Id((self.u8() & 1 == 1).then(|| self.u32() % 8)),
            10 => Answer::QueueStatus(QueueFigures {
                deserved: (0..self.len()).map(|_| self.f64()).collect(),
                share: (0..self.len()).map(|_| self.f64()).collect(),
            }),
            _ => Answer::Unit,
        }
    }
}

/// A plugin answering from the bytes; it faults when they say so.
struct Fuzzed {
    info: PluginInfo,
    bytes: Bytes,
}

impl Backend for Fuzzed {
    fn info(&self) -> &PluginInfo {
        &self.info
    }
    fn origin(&self) -> &str {
        "fuzz"
    }
    fn open_session(&mut self, _: &Snapshot, _: &Arc<Names>, _: &[(String, String)]) -> Result<(), String> {
        (!self.bytes.u8().is_multiple_of(16)).then_some(()).ok_or_else(|| self.bytes.text())
    }
    fn update_session(&mut self, _: &SnapshotDelta, _: &Arc<Names>, _: &[(String, String)]) -> Result<bool, String> {
        Ok(false)
    }
    fn close_session(&mut self) -> Result<(), String> {
        Ok(())
    }
    fn on_events(&mut self, _: &[Event]) -> Result<(), String> {
        Ok(())
    }
    fn call(&mut self, _: Call<'_>) -> Result<Answer, String> {
        match self.bytes.u8() % 16 {
            0 => Err(self.bytes.text()),
            _ => Ok(self.bytes.answer()),
        }
    }
    fn discard(&mut self) {}
}

const POINTS: [P; 20] = [
    P::QueueOrder,
    P::JobOrder,
    P::TaskOrder,
    P::Predicate,
    P::NodeOrder,
    P::Overused,
    P::Allocatable,
    P::Preemptive,
    P::JobReady,
    P::JobPipelined,
    P::JobEnqueueable,
    P::JobValid,
    P::JobStarving,
    P::Preemptable,
    P::Reclaimable,
    P::VictimTasks,
    P::TargetJob,
    P::ReservedNodes,
    P::QueueStatus,
    P::VictimQueueOrder,
];

/// Three plugins in two tiers, each fault policy, asked everything twice.
pub fn answers(data: &[u8]) {
    let bytes = Bytes(Arc::new(Mutex::new(data.iter().copied().collect())));
    let slot = |name: &str, skip: bool| {
        let info = PluginInfo {
            name: name.into(),
            version: "fuzz".into(),
            contract: tephra_contract::CONTRACT.into(),
            points: POINTS.to_vec(),
        };
        let mut conf = PluginConf::new(name);
        conf.fault_skip = skip;
        Slot::new(conf, Box::new(Fuzzed { info, bytes: bytes.clone() }))
    };
    let mut p = Policies::new(vec![vec![slot("a", false), slot("b", true)], vec![slot("c", false)]], true);
    let snap = tephra_snapshot::empty_snapshot(vec!["cpu".into()]);
    let ids = [0, 1, 2, 3];
    for _ in 0..2 {
        p.open(&snap, &Arc::default());
        let _ = p.order_keys(&[], Call::JobOrder(&ids), ids.len());
        let _ = p.predicate(&[], 0, &ids);
        let _ = p.node_scores(&[], 0, &ids);
        let _ = p.any_true(&[], Call::Overused(0));
        let _ = p.all_true(&[], Call::Allocatable(0, 0));
        let _ = p.all_true(&[], Call::JobReady(0));
        let _ = p.vote(&[], Call::JobEnqueueable(0));
        let _ = p.job_valid(&[], 0);
        let _ = p.job_starving(&[], 0);
        let _ = p.victims(&[], Call::Reclaimable(0, &ids), &ids);
        let _ = p.victim_tasks(&[], &ids);
        let _ = p.target_job(&[], &ids);
        let _ = p.reserved_nodes(&[], LockOwner::Queue(0), &ids);
        let _ = p.queue_status(&[], &ids, 1);
        p.close(&[]);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn regression_corpus_answers_without_panics() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../fuzz/regressions/answers");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            super::answers(&std::fs::read(e.unwrap().path()).unwrap());
            n += 1;
        }
        assert!(n > 0, "no cases in {}", dir.display());
    }
}
