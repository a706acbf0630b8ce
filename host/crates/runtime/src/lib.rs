//! The WebAssembly plugin runtime: the engine and its sandbox ([`engine`]),
//! a `.wasm` component as a dispatcher [`Backend`](tephra_dispatch::backend::Backend)
//! ([`plugin`]), the plugin [`library`] with every version it replaced,
//! [`staging`] of new versions, and the plugins-directory [`watch`].

#![warn(missing_docs)]

mod contracts;
mod engine;
pub mod library;
mod output;
mod plugin;
pub mod staging;
mod state;
pub mod watch;

pub use engine::{default_cache_dir, Runtime, Sandbox};
pub use library::Library;
pub use plugin::{content_hash, WasmPlugin, SESSIONS_PER_INSTANCE};
/// The contract's types, for code that knew them as `wasm::contract`.
pub use tephra_contract as contract;

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
