//! A policy that opens a connection: its component imports `wasi:sockets`,
//! which the host must refuse at load, naming the import.

use tephra_sdk::{Args, ExtensionPoint as P, Policy, Session};

#[derive(Default)]
pub struct Snoop;

impl Policy for Snoop {
    const NAME: &'static str = "snoop";
    const POINTS: &'static [P] = &[P::JobOrder];

    fn open(&mut self, _s: &Session, _args: &Args) -> Result<(), String> {
        std::net::TcpStream::connect("127.0.0.1:6443").map(|_| ()).map_err(|e| e.to_string())
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(Snoop: job_order);
