//! Swap-test plugin `prefer`, version "crowded": scores like "last", and
//! traps opening every session once the cluster has three or more nodes —
//! it passes the dry run on a two-node cluster and faults every cycle after
//! a third node arrives (a rollback test).

use tephra_sdk::{Args, ExtensionPoint as P, Policy, Session};

#[derive(Default)]
pub struct Prefer;

impl Policy for Prefer {
    const NAME: &'static str = "prefer";
    const VERSION: &'static str = "crowded";
    const POINTS: &'static [P] = &[P::NodeOrder];

    fn open(&mut self, s: &Session, _args: &Args) -> Result<(), String> {
        if s.nodes() >= 3 {
            panic!("prefer/crowded: deliberate trap with {} nodes", s.nodes());
        }
        Ok(())
    }

    fn node_score(&mut self, _s: &Session, _task: u32, node: u32) -> f64 {
        node as f64 + 1.0
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Prefer: node_order);
