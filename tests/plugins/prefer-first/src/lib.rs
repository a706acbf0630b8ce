//! Swap-test plugin `prefer`, version "first": scores lower node ids higher.

use tephra_sdk::{ExtensionPoint as P, Policy, Session};

#[derive(Default)]
pub struct Prefer;

impl Policy for Prefer {
    const NAME: &'static str = "prefer";
    const VERSION: &'static str = "first";
    const POINTS: &'static [P] = &[P::NodeOrder];

    fn node_score(&mut self, s: &Session, _task: u32, node: u32) -> f64 {
        (s.nodes() as u32 - node) as f64
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Prefer: node_order);
