//! Volcano's `test-rejecter` test double: rejects JobEnqueueable for the job
//! named by argument `reject_job` (PodGroup name), abstains for the others.

use tephra_sdk::{Args, ExtensionPoint as P, Policy, Session, Vote};

#[derive(Default)]
pub struct TestRejecter {
    reject: String,
}

impl Policy for TestRejecter {
    const NAME: &'static str = "test-rejecter";
    const POINTS: &'static [P] = &[P::JobEnqueueable];

    fn open(&mut self, _s: &Session, args: &Args) -> Result<(), String> {
        self.reject = args.get("reject_job").unwrap_or_default().to_string();
        Ok(())
    }

    fn job_enqueueable(&mut self, _s: &Session, job: u32) -> Vote {
        let name = tephra_sdk::log::name(tephra_sdk::bindings::tephra::scheduler::host::Kind::Job, job);
        if name.rsplit('/').next() == Some(self.reject.as_str()) {
            Vote::Reject
        } else {
            Vote::Abstain
        }
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(TestRejecter: job_enqueueable);
