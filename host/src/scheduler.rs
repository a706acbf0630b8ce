//! The scheduling cycle: open a session on the cluster, run the configured
//! actions, close it. Plugins are loaded once per config and reused.

use crate::actions;
use crate::config::SchedulerConfig;
use crate::model::Cluster;
use crate::plugin::Backend;
use crate::policy::{Policies, Slot};
use crate::session::{Outcome, Session, StatusOverrides};
use crate::wasm::{builtin, Runtime, Sandbox, WasmPlugin};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Compiled plugins by name: the built-in set, overridden by `.wasm` files
/// from a plugins directory.
pub struct Library {
    pub runtime: Runtime,
    plugins: BTreeMap<String, WasmPlugin>,
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
        if let Some(dir) = dir {
            let entries = std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
            let mut files: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
                .collect();
            files.sort();
            for f in files {
                let bytes = std::fs::read(&f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
                let p = WasmPlugin::load(&runtime, &bytes, &f.display().to_string())?;
                let stem = f.file_stem().unwrap().to_string_lossy().to_string();
                if p.info().name != stem {
                    bail!(
                        "{}: the component calls itself {:?}; name the file {}.wasm",
                        f.display(),
                        p.info().name,
                        p.info().name
                    );
                }
                plugins.insert(stem, p);
            }
        }
        Ok(Library { runtime, plugins })
    }

    pub fn has(&self, name: &str) -> bool {
        self.plugins.contains_key(name)
    }

    /// Builds the tiers of `config`; plugins tephra does not have are
    /// returned by name (Volcano skips them with a log line).
    pub fn policies(&self, config: &SchedulerConfig) -> (Policies, Vec<String>) {
        let mut missing = Vec::new();
        let mut tiers = Vec::new();
        for tier in &config.tiers {
            let mut slots = Vec::new();
            for conf in tier {
                match self.plugins.get(&conf.name) {
                    Some(p) => slots.push(Slot::new(conf.clone(), Box::new(p.clone()) as Box<dyn Backend>)),
                    None => missing.push(conf.name.clone()),
                }
            }
            tiers.push(slots);
        }
        (Policies::new(tiers, config.unset_is_on), missing)
    }
}

/// A scheduler: a config, its loaded policies, and a cycle function.
pub struct Scheduler {
    pub config: SchedulerConfig,
    policies: Option<Policies>,
    /// Configured actions tephra does not implement yet (skipped).
    pub missing_actions: Vec<String>,
    pub missing_plugins: Vec<String>,
    pub seed: u64,
}

impl Scheduler {
    pub fn new(config: SchedulerConfig, library: &Library) -> Self {
        let (policies, missing_plugins) = library.policies(&config);
        let missing_actions = config.actions.iter().filter(|a| actions::by_name(a).is_none()).cloned().collect();
        Scheduler { config, policies: Some(policies), missing_actions, missing_plugins, seed: 0x5eed }
    }

    /// Runs one cycle over `cluster`.
    pub fn cycle(&mut self, cluster: &Cluster, overrides: &StatusOverrides, now_ms: i64) -> Outcome {
        let actions = self.config.actions.clone();
        self.inspect(cluster, overrides, now_ms, |ssn| {
            for name in &actions {
                if let Some(action) = actions::by_name(name) {
                    action(ssn);
                }
            }
        })
    }

    /// Opens a session, lets `f` work on it, closes it.
    pub fn inspect(
        &mut self,
        cluster: &Cluster,
        overrides: &StatusOverrides,
        now_ms: i64,
        f: impl FnOnce(&mut Session),
    ) -> Outcome {
        let policies = self.policies.take().expect("policies are returned by every session");
        self.seed = self.seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut ssn = Session::open(cluster, policies, overrides, now_ms, self.seed);
        ssn.actions = self.config.actions.clone();
        ssn.action_args = self.config.action_args.clone();
        f(&mut ssn);
        let (outcome, policies) = ssn.close();
        self.policies = Some(policies);
        outcome
    }
}
