//! The plugin library: compiled plugins by name — the built-in set,
//! overridden by `.wasm` files from a plugins directory — with the versions
//! each one replaced, and the tiers a scheduler config makes of them.

use crate::{builtin, Runtime, Sandbox, WasmPlugin};
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tephra_dispatch::backend::Backend;
use tephra_dispatch::policy::{Policies, Slot};
use tephra_model::config::SchedulerConfig;

/// Compiled plugins by name — the built-in set, overridden by `.wasm` files
/// from a plugins directory — with the versions each replaced.
#[derive(Clone)]
pub struct Library {
    pub runtime: Runtime,
    plugins: BTreeMap<String, WasmPlugin>,
    /// Earlier versions per plugin, newest last (for rollback).
    history: BTreeMap<String, Vec<WasmPlugin>>,
    /// Bumped by every promotion or rollback.
    pub generation: u64,
    /// Files of the plugins directory that were not loaded, each with why.
    pub skipped: Vec<String>,
}

impl Library {
    /// Compiles the built-in plugins and every `<name>.wasm` in `dir`.
    pub fn load(dir: Option<&Path>) -> Result<Self> {
        Self::load_with(dir, Sandbox::default())
    }

    /// Like [`Library::load`], with explicit sandbox limits.
    pub fn load_with(dir: Option<&Path>, sandbox: Sandbox) -> Result<Self> {
        let runtime = Runtime::new(sandbox)?;
        let mut plugins = BTreeMap::new();
        for name in builtin::names() {
            let p = WasmPlugin::load(&runtime, builtin::get(name).unwrap(), &format!("built-in {name}"))?;
            plugins.insert(name.to_string(), p);
        }
        // One bad file is skipped with its reason, not a failed start (in a
        // cluster that would be a crash loop of every replica).
        let mut skipped = Vec::new();
        if let Some(dir) = dir {
            for f in wasm_files(dir)? {
                match load_named(&runtime, &f) {
                    Ok(p) => {
                        plugins.insert(p.info().name.clone(), p);
                    }
                    Err(e) => skipped.push(format!("{e:#}")),
                }
            }
        }
        Ok(Library { runtime, plugins, history: BTreeMap::new(), generation: 0, skipped })
    }

    /// Loads one component as the live version of the plugin it names.
    pub fn load_file(&mut self, path: &Path) -> Result<String> {
        let bytes = tephra_model::files::read(path)?;
        let p = WasmPlugin::load(&self.runtime, &bytes, &path.display().to_string())?;
        let name = p.info().name.clone();
        self.plugins.insert(name.clone(), p);
        self.generation += 1;
        Ok(name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.plugins.contains_key(name)
    }

    /// The live version of a plugin.
    pub fn get(&self, name: &str) -> Option<&WasmPlugin> {
        self.plugins.get(name)
    }

    /// Names of all plugins.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.plugins.keys().map(String::as_str)
    }

    /// Earlier versions of a plugin, oldest first.
    pub fn previous(&self, name: &str) -> &[WasmPlugin] {
        self.history.get(name).map_or(&[], Vec::as_slice)
    }

    /// Makes `plugin` the live version of its name; the replaced one is
    /// kept, up to [`HISTORY_MAX`] earlier versions (the oldest go).
    pub fn promote(&mut self, plugin: WasmPlugin) {
        let name = plugin.info().name.clone();
        if let Some(old) = self.plugins.insert(name.clone(), plugin) {
            let history = self.history.entry(name).or_default();
            history.push(old);
            if history.len() > HISTORY_MAX {
                history.drain(..history.len() - HISTORY_MAX);
            }
        }
        self.generation += 1;
    }

    /// Puts the previous version of `name` back.
    pub fn rollback(&mut self, name: &str) -> Result<()> {
        let prev = self
            .history
            .get_mut(name)
            .and_then(Vec::pop)
            .ok_or_else(|| anyhow!("plugin {name}: no earlier version to roll back to"))?;
        self.plugins.insert(name.to_string(), prev);
        self.generation += 1;
        Ok(())
    }

    /// Builds the tiers of `config`, with `replace` standing in for the plugin
    /// of its name (shadows); plugins tephra does not have are returned by name.
    pub fn policies(&self, config: &SchedulerConfig, replace: Option<&WasmPlugin>) -> (Policies, Vec<String>) {
        let mut missing = Vec::new();
        let mut tiers = Vec::new();
        for tier in &config.tiers {
            let mut slots = Vec::new();
            for conf in tier {
                let found = match replace {
                    Some(r) if r.info().name == conf.name => Some(r),
                    _ => self.plugins.get(&conf.name),
                };
                match found {
                    Some(p) => slots.push(Slot::new(conf.clone(), Box::new(p.clone()) as Box<dyn Backend>)),
                    None => missing.push(conf.name.clone()),
                }
            }
            tiers.push(slots);
        }
        let mut policies = Policies::new(tiers, config.unset_is_on);
        if let Some(ms) = config.limits.cycle_budget_ms {
            policies.cycle_budget = std::time::Duration::from_millis(ms as u64);
        }
        (policies, missing)
    }
}

/// Loads `<name>.wasm` from a plugins directory: a component that calls
/// itself something else is refused (a swap would replace the wrong plugin).
pub fn load_named(runtime: &Runtime, f: &Path) -> Result<WasmPlugin> {
    let bytes = tephra_model::files::read(f)?;
    named(WasmPlugin::load(runtime, &bytes, &f.display().to_string())?, f)
}

/// `p`, loaded from `f`, if it calls itself what the file is named.
pub fn named(p: WasmPlugin, f: &Path) -> Result<WasmPlugin> {
    let stem = f.file_stem().unwrap_or_default().to_string_lossy();
    if p.info().name != stem {
        let name = &p.info().name;
        bail!("{}: the component calls itself {name:?}; name the file {name}.wasm", f.display());
    }
    Ok(p)
}

/// Earlier versions kept per plugin for rollback.
pub const HISTORY_MAX: usize = 8;

/// `.wasm` files of a directory, sorted.
pub fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| anyhow!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
        .collect();
    files.sort();
    Ok(files)
}
