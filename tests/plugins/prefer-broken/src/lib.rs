//! Swap-test plugin `prefer`, version "broken": passes a dry run on a
//! snapshot taken at time 0, then traps in every later session.

use tephra_sdk::{ExtensionPoint as P, Policy, Session};

#[derive(Default)]
pub struct Prefer;

impl Policy for Prefer {
    const NAME: &'static str = "prefer";
    const VERSION: &'static str = "broken";
    const POINTS: &'static [P] = &[P::NodeOrder];

    fn node_score(&mut self, s: &Session, _task: u32, node: u32) -> f64 {
        if s.snap.now_ms > 0 {
            panic!("prefer/broken: deliberate trap after time 0");
        }
        node as f64
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Prefer: node_order);
