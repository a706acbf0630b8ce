//! The one loop both drivers run: between two cycles it swaps in staged
//! plugin versions, reloads an edited config and applies admin commands;
//! then the [`Driver`] brings the long-lived cluster up to date, the
//! scheduler runs a cycle on it, and the driver applies the outcome.

use crate::control::{Control, Figure};
use crate::intent::{Act, Actor, Declared};
use crate::queues::{queue_rows, QueueRow};
use crate::rollout::{Rolled, Rollout, Rollouts};
use crate::scheduler::{Notice, Scheduler};
use crate::shadow::ShadowDiff;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tephra_dispatch::backend::Backend;
use tephra_model::cluster::Cluster;
use tephra_readers::config::SchedulerConfig;
use tephra_runtime::content_hash;
use tephra_runtime::watch::Watcher;
use tephra_session::reservation::Reservations;
use tephra_session::session::Outcome;

/// One cycle's results, as a driver receives them.
pub struct Cycle<'a> {
    /// What the session decided.
    pub outcome: &'a Outcome,
    /// How each shadow would have decided differently.
    pub shadows: &'a [ShadowDiff],
    /// The live version (content hash) of each plugin after the cycle (an
    /// automatic rollback shows here).
    pub live: &'a [(String, String)],
    /// The version (content hash) of each shadow.
    pub shadow_versions: &'a [(String, String)],
    /// Who made each plugin's versions what they are.
    pub intent: &'a crate::intent::Intent,
}

/// Where cluster changes come from and where decisions go: the simulator
/// and the Kubernetes driver.
pub trait Driver {
    /// What one step did, for the caller.
    type Report;

    /// Brings `cluster` up to date before a cycle. `Some(now_ms)` runs a
    /// cycle at that time; `None` sits it out (a standby replica, an API
    /// server that does not answer).
    fn prepare(&mut self, cluster: &mut Cluster) -> Option<i64>;

    /// Applies a cycle's decisions to the world and to `cluster` (`None`:
    /// the cycle was sat out). `notices` are what happened to plugin
    /// versions and the config since the last step.
    fn apply(&mut self, cluster: &mut Cluster, cycle: Option<Cycle<'_>>, notices: Vec<Notice>) -> Self::Report;

    /// Waits until the next cycle is due; `false` ends the loop.
    fn wait(&mut self, last: &Self::Report) -> bool;

    /// Ready without a completed cycle (a standby replica whose caches are
    /// synced is ready to take over).
    fn ready(&self) -> bool {
        false
    }

    /// The driver's own figures for the metrics.
    fn figures(&self) -> Vec<Figure> {
        Vec::new()
    }

    /// Reservations to take over before the cycle at `now_ms` (a new leader
    /// adopting what the last one persisted); `None` keeps the scheduler's.
    fn adopt(&mut self, _now_ms: i64) -> Option<Reservations> {
        None
    }

    /// Plugin versions declared since the last step (`tephra run`: Plugin
    /// objects): compiled off the loop, landed between cycles.
    fn rollouts(&mut self) -> Vec<Rollout> {
        Vec::new()
    }

    /// What became of declared versions, between cycles.
    fn rolled(&mut self, _done: Vec<Rolled>) {}

    /// Acts on plugin versions made here since the last step (`tephra run`
    /// keeps admin decisions in the API server, so they outlive a restart
    /// and reach the other replicas).
    fn acted(&mut self, _acts: &[Act], _scheduler: &Scheduler) {}

    /// Persists a queue's decayed usage (the [`crate::usage::USAGE`]
    /// annotation); the simulator keeps it on the cluster's Queue.
    fn record_usage(&mut self, cluster: &mut Cluster, queue: &str, value: String) {
        crate::usage::annotate(cluster, queue, value);
    }
}

/// A config file watched for edits.
struct ConfigFile {
    path: PathBuf,
    hash: Option<String>,
}

/// The scheduler, the cluster it schedules, and the driver that keeps both
/// in touch with the world.
pub struct Loop<D: Driver> {
    /// The one long-lived cluster.
    pub cluster: Cluster,
    /// The scheduler.
    pub scheduler: Scheduler,
    /// The driver.
    pub driver: D,
    plugins: Option<Watcher>,
    config: Option<ConfigFile>,
    control: Option<Control>,
    rollouts: Option<Rollouts>,
}

impl<D: Driver> Loop<D> {
    /// A loop over `cluster`, scheduled by `scheduler`, driven by `driver`.
    pub fn new(cluster: Cluster, scheduler: Scheduler, driver: D) -> Self {
        Loop { cluster, scheduler, driver, plugins: None, config: None, control: None, rollouts: None }
    }

    /// Swaps in new or changed `.wasm` files of `dir` between cycles
    /// (compiled off the loop, staged on the latest snapshot).
    pub fn watch_plugins(&mut self, dir: &Path) -> Result<()> {
        let runtime = self.scheduler.library.runtime.clone();
        self.plugins = Some(Watcher::spawn(dir, runtime, Duration::from_millis(200))?);
        Ok(())
    }

    /// Reloads `path` when its content changes; a bad edit keeps the running config.
    pub fn watch_config(&mut self, path: &Path) {
        let hash = tephra_readers::files::read(path).ok().map(|b| content_hash(&b));
        self.config = Some(ConfigFile { path: path.to_path_buf(), hash });
    }

    /// Takes admin commands and publishes state through `control`.
    pub fn control(&mut self, control: Control) {
        // The plugins loaded are listed from the start, not after the first
        // cycle (a caller that saw that cycle's binds may ask at once).
        control.list_plugins(&self.scheduler);
        self.control = Some(control);
    }

    /// Everything that lands between two cycles.
    fn between_cycles(&mut self) {
        for staged in self.plugins.iter().flat_map(Watcher::ready) {
            let landed = staged.plugin.and_then(|p| {
                let source = format!("file {}", staged.origin);
                let d = Declared {
                    plugin: p.info().name.clone(),
                    source: source.clone(),
                    version: p.hash().to_string(),
                    shadow: false,
                    key: format!("{source}@{}", p.hash()),
                };
                self.scheduler.intent.declare(&source, Some(d));
                self.scheduler.swap_compiled(p, Actor::Source(source))
            });
            if let Err(e) = landed {
                let why = format!("{e:#}").replace('\n', " ");
                self.scheduler.notices.push(Notice::warn(format!("rejected {}: {why}", staged.origin)));
            }
        }
        if let Some(c) = &mut self.config {
            let hash = tephra_readers::files::read(&c.path).ok().map(|b| content_hash(&b));
            if hash != c.hash {
                c.hash = hash;
                match SchedulerConfig::read(&c.path) {
                    Ok(config) => {
                        self.scheduler.set_config(config);
                        self.scheduler.notices.push(Notice::info(format!("reloaded {}", c.path.display())));
                        self.scheduler.warn_unused_plugins();
                    }
                    Err(e) => self.scheduler.notices.push(Notice::warn(format!("kept the previous config: {e:#}"))),
                }
            }
        }
        if let Some(c) = &self.control {
            c.apply(&mut self.scheduler);
        }
        self.land_rollouts();
        self.report_acts();
    }

    /// Hands the acts made since the last call to the driver.
    fn report_acts(&mut self) {
        let acts = self.scheduler.intent.take_fresh();
        if !acts.is_empty() {
            self.driver.acted(&acts, &self.scheduler);
        }
    }

    /// Declared plugin versions: queued for compiling, landed when compiled.
    fn land_rollouts(&mut self) {
        let declared = self.driver.rollouts();
        if self.rollouts.is_none() && !declared.is_empty() {
            match Rollouts::spawn(self.scheduler.library.runtime.clone()) {
                Ok(r) => self.rollouts = Some(r),
                Err(e) => self.scheduler.notices.push(Notice::warn(format!("plugin rollouts cannot start: {e:#}"))),
            }
        }
        let Some(r) = &mut self.rollouts else { return };
        for d in declared {
            r.submit(d);
        }
        let done = r.apply(&mut self.scheduler);
        if !done.is_empty() {
            self.driver.rolled(done);
        }
    }

    /// One step: what lands between cycles, then a cycle (or one sat out).
    pub fn step(&mut self) -> D::Report {
        self.between_cycles();
        let Some(now_ms) = self.driver.prepare(&mut self.cluster) else {
            let notices = std::mem::take(&mut self.scheduler.notices);
            let report = self.driver.apply(&mut self.cluster, None, notices);
            self.publish(false, None);
            return report;
        };
        if let Some(r) = self.driver.adopt(now_ms) {
            self.scheduler.reservations = r;
            // A new leader reads the usage the last one persisted.
            self.scheduler.usage = None;
        }
        // Devices count as resources of their class, on nodes and in pods.
        tephra_model::allocation::account(&mut self.cluster);
        self.account_usage(now_ms);
        let outcome = self.scheduler.cycle(&self.cluster, &Default::default(), now_ms);
        // Each cycle's length, for soak runs (RUST_LOG=tephra::cycles=debug).
        let took = self.scheduler.stats.last_cycle.as_secs_f64() * 1000.0;
        tracing::debug!(target: "tephra::cycles", "cycle {} took {took:.2} ms", self.scheduler.stats.cycles);
        let notices = std::mem::take(&mut self.scheduler.notices);
        let shadows = std::mem::take(&mut self.scheduler.shadow_diffs);
        let live: Vec<(String, String)> = self
            .scheduler
            .library
            .names()
            .filter_map(|n| Some((n.to_string(), self.scheduler.library.get(n)?.hash().to_string())))
            .collect();
        let shadow_versions: Vec<(String, String)> =
            self.scheduler.shadows.iter().map(|(n, p)| (n.clone(), p.hash().to_string())).collect();
        let cycle = Cycle {
            outcome: &outcome,
            shadows: &shadows,
            live: &live,
            shadow_versions: &shadow_versions,
            intent: &self.scheduler.intent,
        };
        let report = self.driver.apply(&mut self.cluster, Some(cycle), notices);
        // A rollback of a faulting version is an act too.
        self.report_acts();
        self.scheduler.shadow_diffs = shadows;
        self.publish(true, Some(&outcome));
        report
    }

    /// Brings the decayed usage up to `now_ms` (when the config orders by
    /// it) and persists it when due.
    fn account_usage(&mut self, now_ms: i64) {
        let Some((half_life, persist)) = crate::usage::settings(&self.scheduler.config) else {
            self.scheduler.usage = None;
            return;
        };
        let ledger = match &mut self.scheduler.usage {
            Some(l) if l.half_life_ms == half_life => l,
            slot => {
                let (l, warnings) = crate::usage::Ledger::adopt(&self.cluster, half_life, persist);
                self.scheduler.notices.extend(warnings.into_iter().map(Notice::warn));
                if !l.queues.is_empty() {
                    let names: Vec<&str> = l.queues.keys().map(String::as_str).collect();
                    let adopted = format!("adopted the decayed usage of queues {}", names.join(", "));
                    self.scheduler.notices.push(Notice::info(adopted));
                }
                slot.insert(l)
            }
        };
        ledger.persist_ms = persist;
        ledger.account(&self.cluster, now_ms);
        for (queue, value) in ledger.due(now_ms) {
            self.driver.record_usage(&mut self.cluster, &queue, value);
        }
    }

    fn publish(&mut self, ready: bool, outcome: Option<&Outcome>) {
        if let Some(c) = &self.control {
            let queues: Vec<QueueRow> = queue_rows(&self.cluster, outcome);
            self.scheduler.metrics.queues(&queues);
            c.publish(&self.scheduler, ready || self.driver.ready(), queues, self.driver.figures());
        }
    }

    /// Steps until the driver says stop, handing each report to `each`.
    pub fn run(&mut self, mut each: impl FnMut(&D::Report)) {
        loop {
            let r = self.step();
            each(&r);
            if !self.driver.wait(&r) {
                break;
            }
        }
    }
}
