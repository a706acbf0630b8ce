//! The policy lab: one workload run under several scheduler configurations
//! or plugin versions, side by side, with the figures of each
//! ([`tephra_sim::lab::Summary`]) and a report people look at ([`html`]).

pub mod fidelity;
pub mod html;
pub mod replay;

use crate::config::SchedulerConfig;
use crate::manifest::{self, Object, Timed};
use crate::scheduler::{Library, Scheduler};
use crate::simulate::{Options, Simulation};
use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
pub use tephra_sim::lab::{seconds, Recorder, Summary};

/// One way of running the workload.
#[derive(Clone)]
pub struct Variant {
    /// Its name in the report.
    pub name: String,
    /// Where it came from (a file, or "base").
    pub origin: String,
    /// The scheduler config it runs.
    pub config: SchedulerConfig,
    /// Objects replacing the workload's of the same kind and name (Queues
    /// with other shares, say).
    pub overrides: Vec<Timed>,
    /// Components run as the live version of the plugin each names.
    pub plugins: Vec<PathBuf>,
}

impl Variant {
    /// The workload's own configuration.
    pub fn base(config: SchedulerConfig) -> Self {
        Variant {
            name: "base".into(),
            origin: "the workload's files".into(),
            config,
            overrides: vec![],
            plugins: vec![],
        }
    }

    /// A variant from a file: a `.wasm` component (the base config with
    /// that plugin version), a manifest with a scheduler ConfigMap and
    /// perhaps Queues and other objects replacing the workload's, or a
    /// `volcano-scheduler.conf`. Named after the file.
    pub fn from_file(path: &Path, base: &SchedulerConfig) -> Result<Self> {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("variant").to_string();
        let origin = path.display().to_string();
        if path.extension().is_some_and(|e| e == "wasm") {
            return Ok(Variant { name, origin, config: base.clone(), overrides: vec![], plugins: vec![path.into()] });
        }
        let text = crate::files::read_text(path)?;
        let objects = manifest::parse(&text, &origin).ok().filter(|o| !o.is_empty());
        let Some(objects) = objects else {
            let config = SchedulerConfig::parse(&text, &origin)?;
            return Ok(Variant { name, origin, config, overrides: vec![], plugins: vec![] });
        };
        let mut config = None;
        let mut overrides = Vec::new();
        for t in objects {
            match t.object {
                Object::Config(c) => config = Some(c),
                _ => overrides.push(t),
            }
        }
        let config = config.unwrap_or_else(|| base.clone());
        Ok(Variant { name, origin, config, overrides, plugins: vec![] })
    }

    /// The workload with this variant's objects in place of its own.
    pub fn objects(&self, workload: &[Timed]) -> Vec<Timed> {
        let replaced: HashSet<(&str, String)> = self.overrides.iter().filter_map(|t| t.object.identity()).collect();
        let keep = |t: &&Timed| !t.object.identity().is_some_and(|id| replaced.contains(&id));
        let kept = workload.iter().filter(keep).filter(|t| !matches!(t.object, Object::Config(_)));
        self.overrides.iter().cloned().chain(kept.cloned()).collect()
    }
}

/// Names must tell the variants apart in the report.
pub fn check_names(variants: &[Variant]) -> Result<()> {
    let mut seen = HashSet::new();
    for v in variants {
        if !seen.insert(v.name.as_str()) {
            bail!("{}: variant name {:?} is used twice (rename one file)", v.origin, v.name);
        }
    }
    Ok(())
}

/// How far a run is: simulated seconds so far, and the last arrival.
pub type Progress<'a> = &'a mut dyn FnMut(&str, f64, f64);

/// Runs the workload under one variant until it settles or `options`
/// stops it, calling `progress` after each cycle.
pub fn run(
    variant: &Variant,
    workload: &[Timed],
    plugins_dir: Option<&Path>,
    options: Options,
    progress: Progress<'_>,
) -> Result<Summary> {
    let sandbox = crate::wasm::Sandbox::configured(&variant.config.limits);
    let mut library = Library::load_with(plugins_dir, sandbox)?;
    for p in &variant.plugins {
        library.load_file(p)?;
    }
    let scheduler = Scheduler::new(variant.config.clone(), &library);
    if let Some(p) = scheduler.missing_plugins.first() {
        return Err(anyhow!("{}: plugin {p:?} is configured but not available", variant.origin));
    }
    let mut sim = Simulation::new(variant.objects(workload), scheduler, options);
    let end = sim.last_arrival();
    let mut rec = Recorder::default();
    sim.0.run(|r| {
        rec.observe(r);
        progress(&variant.name, r.time, end);
    });
    Ok(rec.summary(&variant.name))
}

/// What a comparison produced: the workload and each variant's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// The workload's files.
    pub workload: Vec<String>,
    /// Each variant's figures.
    pub variants: Vec<Summary>,
    /// The forecast checked against a cluster (`tephra fidelity`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<fidelity::Fidelity>,
}

impl Comparison {
    /// The figures as text, a block per variant.
    pub fn text(&self) -> String {
        let mut s = format!("tephra lab: {}\n", self.workload.join(", "));
        for v in &self.variants {
            s += &v.text();
        }
        s
    }

    /// Writes `path` (HTML) and the same figures as JSON beside it.
    pub fn write(&self, path: &Path) -> Result<PathBuf> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| anyhow!("{}: {e}", dir.display()))?;
        }
        let json = path.with_extension("json");
        std::fs::write(path, html::render(self)?).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        std::fs::write(&json, serde_json::to_string_pretty(self)? + "\n")
            .map_err(|e| anyhow!("{}: {e}", json.display()))?;
        Ok(json)
    }
}
