//! The WebAssembly runtime: the one place that runs `bindgen!`, configures
//! the engine, and turns a `.wasm` component into a [`crate::plugin::Backend`].

mod bindings;
mod engine;
mod output;
mod plugin;

pub use bindings::tephra::scheduler::types as contract;
pub use engine::{Runtime, Sandbox};
pub use plugin::{content_hash, WasmPlugin, SESSIONS_PER_INSTANCE};

/// The default plugins, compiled to components by the build script.
pub mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin_plugins.rs"));

    /// The embedded component of a default plugin.
    pub fn get(name: &str) -> Option<&'static [u8]> {
        PLUGINS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }

    /// Names of the default plugins.
    pub fn names() -> impl Iterator<Item = &'static str> {
        PLUGINS.iter().map(|(n, _)| *n)
    }
}
