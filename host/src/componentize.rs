//! `tephra plugin componentize`: a core WebAssembly module built for
//! `wasip1` with the contract's exports (Go's `//go:wasmexport`, as
//! wit-bindgen's Go generator writes them) made into a component. The WIT
//! world is embedded as the module's `component-type` section and WASI
//! preview 1 imports are adapted to preview 2 with the reactor adapter
//! wasmtime publishes (`wasi-preview1-component-adapter-provider`), as
//! `wasm-tools component embed` and `component new --adapt` would.

use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;

/// The component for `core` (a wasip1 module) of world `world` in `wit`.
pub fn componentize(core: &Path, wit: &Path, world: &str) -> Result<Vec<u8>> {
    let mut module = std::fs::read(core).with_context(|| format!("{}: cannot read", core.display()))?;
    // A core module: the magic and version 1 (a component's layer differs).
    if !module.starts_with(b"\0asm\x01\0\0\0") {
        bail!("{}: not a core WebAssembly module (a component, or not WebAssembly at all)", core.display());
    }
    let mut resolve = wit_parser::Resolve::default();
    let (pkg, _) = resolve.push_dir(wit).map_err(|e| anyhow!("{}: the WIT does not parse: {e:#}", wit.display()))?;
    let world = resolve.select_world(&[pkg], Some(world)).map_err(|e| anyhow!("{}: {e:#}", wit.display()))?;
    wit_component::embed_component_metadata(&mut module, &resolve, world, wit_component::StringEncoding::UTF8, false)
        .map_err(|e| anyhow!("{}: cannot embed the world: {e:#}", core.display()))?;
    let adapter = wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;
    wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .and_then(|e| e.adapter("wasi_snapshot_preview1", adapter))
        .and_then(|e| e.encode())
        .map_err(|e| anyhow!("{}: not a module of world {}: {e:#}", core.display(), resolve.worlds[world].name))
}
