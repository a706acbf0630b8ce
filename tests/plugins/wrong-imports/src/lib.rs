//! A policy that reads a file: its component imports `wasi:filesystem`,
//! which the host must refuse at load, naming the import.

use tephra_sdk::{Args, ExtensionPoint as P, Policy, Session};

#[derive(Default)]
pub struct Snoop;

impl Policy for Snoop {
    const NAME: &'static str = "snoop";
    const POINTS: &'static [P] = &[P::JobOrder];

    fn open(&mut self, _s: &Session, _args: &Args) -> Result<(), String> {
        std::fs::read_to_string("/etc/passwd").map(|_| ()).map_err(|e| e.to_string())
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Snoop: job_order);
