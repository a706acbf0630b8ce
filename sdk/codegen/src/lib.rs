//! Every table that restates the plugin contract, generated from `wit/`.
//!
//! The contract is written once, in `wit/scheduler.wit`. Bindings come from
//! it already (wasmtime's `bindgen!`, wit-bindgen, componentize-py, jco);
//! what they do not give is the list of extension points with their
//! functions, the snapshot's columns and the enums' cases as data each SDK
//! can walk, nor the hand-kept enums and empty snapshots of the Rust crates.
//! This crate reads the WIT with `wit-parser` and writes those files
//! ([`generate`]); a test fails when one is stale ([`stale`]).
//! [`compat`] checks a contract change against the last released version.

pub mod compat;
mod contract;
mod render;

use std::path::Path;

pub use contract::{Contract, Field, Function, Point};

/// A generated file: its path from the repository root and its text.
pub struct File {
    pub path: String,
    pub text: String,
}

/// Every generated file, from the contract in `root/wit`.
pub fn generate(root: &Path) -> anyhow::Result<Vec<File>> {
    let c = Contract::load(&root.join("wit"))?;
    Ok(render::all(&c))
}

/// The paths of `files` whose text on disk (under `root`) differs or is missing.
pub fn stale(root: &Path, files: &[File]) -> Vec<String> {
    files
        .iter()
        .filter(|f| std::fs::read_to_string(root.join(&f.path)).ok().as_deref() != Some(f.text.as_str()))
        .map(|f| f.path.clone())
        .collect()
}
