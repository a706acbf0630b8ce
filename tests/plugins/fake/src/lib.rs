//! Volcano's shuffle test double (`fake`): VictimTasks returns every candidate
//! whose task priority equals argument `priority` (default 10).

use tephra_sdk::{Args, ExtensionPoint as P, Policy, Session};

#[derive(Default)]
pub struct Fake {
    priority: i32,
}

impl Policy for Fake {
    const NAME: &'static str = "fake";
    const POINTS: &'static [P] = &[P::VictimTasks];

    fn open(&mut self, _s: &Session, args: &Args) -> Result<(), String> {
        self.priority = args.f64("priority", 10.0)? as i32;
        Ok(())
    }

    fn victim_tasks(&mut self, s: &Session, candidates: &[u32]) -> Vec<u32> {
        candidates.iter().copied().filter(|&t| s.snap.task_priority[t as usize] == self.priority).collect()
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Fake: victim_tasks);
