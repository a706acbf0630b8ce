//! SLA: a job waiting longer than its SLA goes first, and is admitted and
//! allowed to start while merely pipelined (Volcano's `sla` plugin, §8.12).
//! The waiting time is the plugin argument `sla-waiting-time`, overridden per
//! PodGroup by the annotation `sla-waiting-time` or `volcano.sh/sla-waiting-time`
//! (Go duration strings: "1h30m", "45s", "500ms").

use tephra_sdk::{parse_duration, Args, ExtensionPoint as P, Policy, Session, Vote};

#[derive(Default)]
pub struct Sla {
    /// Per job: the moment its SLA expires, if it has one.
    deadline: Vec<Option<f64>>,
}

impl Sla {
    fn expired(&self, s: &Session, job: u32) -> bool {
        self.deadline[job as usize].is_some_and(|d| s.snap.now_ms as f64 >= d)
    }
}

impl Policy for Sla {
    const NAME: &'static str = "sla";
    const POINTS: &'static [P] = &[P::JobOrder, P::JobEnqueueable, P::JobPipelined];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        let global = match args.get("sla-waiting-time") {
            Some(v) => {
                Some(parse_duration(v).ok_or_else(|| format!("argument sla-waiting-time: {v:?} is not a duration"))?)
            }
            None => None,
        };
        let mut waiting = vec![global; s.jobs()];
        for a in &s.snap.job_annotations {
            let key = s.str(a.key);
            if key == "sla-waiting-time" || key == "volcano.sh/sla-waiting-time" {
                // An unparsable annotation leaves the job without an SLA, as in Volcano.
                waiting[a.owner as usize] = parse_duration(s.str(a.value));
            }
        }
        self.deadline =
            waiting.iter().enumerate().map(|(j, w)| w.map(|w| s.snap.job_created_ms[j] as f64 + w)).collect();
        Ok(())
    }

    /// Jobs with a deadline first, the earliest deadline first.
    fn job_order(&mut self, _s: &Session, job: u32) -> f64 {
        self.deadline[job as usize].unwrap_or(f64::INFINITY)
    }

    fn job_enqueueable(&mut self, s: &Session, job: u32) -> Vote {
        if self.expired(s, job) {
            Vote::Permit
        } else {
            Vote::Abstain
        }
    }

    fn job_pipelined(&mut self, s: &Session, job: u32) -> Vote {
        self.job_enqueueable(s, job)
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Sla: job_order, job_enqueueable, job_pipelined);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::SnapshotBuilder;

    #[test]
    fn expired_jobs_go_first_and_are_permitted() {
        let mut b = SnapshotBuilder::new(&[]);
        let q = b.queue(1.0);
        let old = b.job(q, 1);
        let young = b.job(q, 1);
        let annotated = b.job(q, 1);
        b.snap.job_created_ms = vec![0, 50_000, 0];
        let (k, v) = (b.string("volcano.sh/sla-waiting-time"), b.string("2m"));
        b.snap.job_annotations.push(tephra_sdk::types::Label { owner: annotated, key: k, value: v });
        b.snap.now_ms = 60_000;
        let s = b.build();
        let mut sla = Sla::default();
        sla.open(&s, &Args::from_pairs(vec![("sla-waiting-time".into(), "30s".into())])).unwrap();
        assert_eq!(sla.job_enqueueable(&s, old), Vote::Permit, "waited 60s > 30s");
        assert_eq!(sla.job_enqueueable(&s, young), Vote::Abstain, "waited 10s");
        assert_eq!(sla.job_pipelined(&s, annotated), Vote::Abstain, "annotation: 2m");
        assert!(sla.job_order(&s, old) < sla.job_order(&s, young));
        assert!(sla.job_order(&s, young) < sla.job_order(&s, annotated));
        let mut none = Sla::default();
        none.open(&s, &Args::default()).unwrap();
        assert_eq!(none.job_order(&s, old), none.job_order(&s, young), "no SLA: no opinion");
        assert!(none.open(&s, &Args::from_pairs(vec![("sla-waiting-time".into(), "x".into())])).is_err());
    }
}
