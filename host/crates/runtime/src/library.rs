//! The plugin library: compiled plugins by name — the built-in set,
//! overridden by `.wasm` files from a plugins directory — with the versions
//! each one replaced, and the tiers a scheduler config makes of them.

use crate::{builtin, Runtime, Sandbox, WasmPlugin};
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tephra_dispatch::backend::Backend;
use tephra_dispatch::policy::{Policies, Slot};
use tephra_readers::config::SchedulerConfig;

/// How a version that is not live came to be out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// Replaced by a newer version: a rollback brings it back.
    Previous,
    /// Rolled back from: kept so it can be rolled forward again.
    RolledBackFrom,
}

impl Held {
    /// The word the plugin table shows.
    pub fn name(self) -> &'static str {
        match self {
            Held::Previous => "previous",
            Held::RolledBackFrom => "rolled-back-from",
        }
    }
}

/// Compiled plugins by name — the built-in set, overridden by `.wasm` files
/// from a plugins directory — with the other versions each has run, every
/// one once (by content hash).
#[derive(Clone)]
pub struct Library {
    /// The engine every version is compiled with.
    pub runtime: Runtime,
    plugins: BTreeMap<String, WasmPlugin>,
    /// Versions per plugin that are not live, the most recently live last.
    history: BTreeMap<String, Vec<(WasmPlugin, Held)>>,
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
        let bytes = tephra_readers::files::read(path)?;
        let p = WasmPlugin::load(&self.runtime, &bytes, &path.display().to_string())?;
        let name = p.info().name.clone();
        self.plugins.insert(name.clone(), p);
        self.generation += 1;
        Ok(name)
    }

    /// Whether a plugin of this name is live.
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

    /// The versions of a plugin that are not live, oldest first, each with
    /// how it came to be out.
    pub fn held(&self, name: &str) -> &[(WasmPlugin, Held)] {
        self.history.get(name).map_or(&[], Vec::as_slice)
    }

    /// Earlier versions of a plugin a rollback can bring back, oldest first.
    pub fn previous(&self, name: &str) -> Vec<&WasmPlugin> {
        self.held(name).iter().filter(|(_, h)| *h == Held::Previous).map(|(p, _)| p).collect()
    }

    /// A version of `name` the library holds (live or not), by content hash.
    pub fn version(&self, name: &str, hash: &str) -> Option<&WasmPlugin> {
        self.plugins
            .get(name)
            .filter(|p| p.hash() == hash)
            .or_else(|| self.held(name).iter().map(|(p, _)| p).find(|p| p.hash() == hash))
    }

    /// Makes `plugin` the live version of its name; the replaced one is kept
    /// as `previous`, up to [`HISTORY_MAX`] versions held (the oldest go).
    pub fn promote(&mut self, plugin: WasmPlugin) {
        self.make_live(plugin, Held::Previous);
    }

    /// `plugin` live; the version it replaces held as `was`. A version held
    /// already is taken out of the list rather than kept twice.
    fn make_live(&mut self, plugin: WasmPlugin, was: Held) {
        let name = plugin.info().name.clone();
        let history = self.history.entry(name.clone()).or_default();
        history.retain(|(p, _)| p.hash() != plugin.hash());
        if let Some(old) = self.plugins.insert(name, plugin.clone()) {
            if old.hash() != plugin.hash() {
                history.push((old, was));
            }
        }
        if history.len() > HISTORY_MAX {
            history.drain(..history.len() - HISTORY_MAX);
        }
        self.generation += 1;
    }

    /// Puts the latest previous version of `name` back; the version it
    /// replaces stays held as rolled back from.
    pub fn rollback(&mut self, name: &str) -> Result<()> {
        let prev = self
            .held(name)
            .iter()
            .rev()
            .find(|(_, h)| *h == Held::Previous)
            .map(|(p, _)| p.clone())
            .ok_or_else(|| anyhow!("plugin {name}: no earlier version to roll back to"))?;
        self.make_live(prev, Held::RolledBackFrom);
        Ok(())
    }

    /// Puts the version `name` was last rolled back from live again.
    pub fn forward(&mut self, name: &str) -> Result<()> {
        let next = self
            .held(name)
            .iter()
            .rev()
            .find(|(_, h)| *h == Held::RolledBackFrom)
            .map(|(p, _)| p.clone())
            .ok_or_else(|| anyhow!("plugin {name}: no rolled-back version to roll forward to"))?;
        self.make_live(next, Held::Previous);
        Ok(())
    }

    /// Makes the held version `hash` of `name` live; the replaced one is
    /// held as `was`. An unknown hash changes nothing.
    pub fn pin(&mut self, name: &str, hash: &str, was: Held) -> Result<()> {
        if self.get(name).is_some_and(|p| p.hash() == hash) {
            return Ok(());
        }
        let p = self
            .version(name, hash)
            .cloned()
            .ok_or_else(|| anyhow!("plugin {name}: version {hash} is not held here"))?;
        self.make_live(p, was);
        Ok(())
    }

    /// Keeps `plugin` as a held version of its name without running it
    /// (a declared version an admin decision keeps out).
    pub fn hold(&mut self, plugin: WasmPlugin, held: Held) {
        let name = plugin.info().name.clone();
        if self.get(&name).is_some_and(|p| p.hash() == plugin.hash()) {
            return;
        }
        let history = self.history.entry(name).or_default();
        history.retain(|(p, _)| p.hash() != plugin.hash());
        history.push((plugin, held));
        if history.len() > HISTORY_MAX {
            history.drain(..history.len() - HISTORY_MAX);
        }
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
    let bytes = tephra_readers::files::read(f)?;
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

/// Versions held per plugin besides the live one.
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
