//! The scheduling cycle: open a session on the cluster, run the configured
//! actions, close it. The scheduler owns a [`Library`] of plugin versions and
//! rebuilds its tiers whenever the library changes, so a swap takes effect
//! exactly between two cycles.

use crate::intent::{Actor, Intent};
use crate::shadow::{self, ShadowDiff};
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tephra_actions as actions;
use tephra_contract::Snapshot;
use tephra_dispatch::backend::Backend;
use tephra_dispatch::policy::Policies;
use tephra_model::cluster::Cluster;
use tephra_readers::config::SchedulerConfig;
use tephra_runtime::library::Held;
use tephra_runtime::{staging, Library, WasmPlugin};
use tephra_session::reservation::Reservations;
use tephra_session::session::{Decision, Names, Outcome, Session, StatusOverrides};
use tephra_snapshot::cache::SnapshotCache;

/// How much a notice matters to the person reading the logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Routine: a swap, a reload, a promotion asked for.
    Info,
    /// Needs a person: a rejected version, a config kept, a rollback on faults.
    Warn,
}

/// What happened to plugin versions or the config between two cycles.
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    /// How much it matters.
    pub level: Level,
    /// What happened, one line.
    pub text: String,
}

impl Notice {
    /// A notice of something done as asked.
    pub fn info(text: impl Into<String>) -> Notice {
        Notice { level: Level::Info, text: text.into() }
    }

    /// A notice of something refused or gone wrong.
    pub fn warn(text: impl Into<String>) -> Notice {
        Notice { level: Level::Warn, text: text.into() }
    }
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Counters of a running scheduler (exported as metrics).
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Cycles run.
    pub cycles: u64,
    /// How long the last one took.
    pub last_cycle: Duration,
    /// Σ seconds of every cycle.
    pub cycle_seconds_sum: f64,
    /// Per action: (runs, seconds).
    pub actions: BTreeMap<String, (u64, f64)>,
    /// Per plugin: (calls, seconds, faults).
    pub plugins: BTreeMap<String, (u64, f64, u64)>,
    /// Binds decided.
    pub binds: u64,
    /// Evictions decided.
    pub evictions: u64,
    /// Plugin versions swapped in.
    pub swaps: u64,
    /// Versions rolled back (by an admin or by faults).
    pub rollbacks: u64,
    /// Decisions a shadow would have changed.
    pub shadow_diffs: u64,
    /// Per (shadow plugin, kind of decision): decisions it would have changed.
    pub shadow_diffs_by: BTreeMap<(String, &'static str), u64>,
}

/// A scheduler: a config, a library of plugin versions, shadows, and a
/// cycle function.
pub struct Scheduler {
    /// The scheduler config in force.
    pub config: SchedulerConfig,
    /// The plugin versions.
    pub library: Library,
    policies: Option<Policies>,
    built_for: u64,
    /// Plugins the config names that the library lacks.
    pub missing_plugins: Vec<String>,
    /// The seed of the sessions' random tie-breaks.
    pub seed: u64,
    /// Shadow versions by plugin name: run beside the live one, never applied.
    pub shadows: BTreeMap<String, WasmPlugin>,
    /// The latest session's snapshot, for dry runs of staged plugins.
    pub last_snapshot: Option<(Snapshot, Arc<Names>)>,
    /// Faulty cycles in a row per plugin, since its last promotion.
    pub fault_streak: BTreeMap<String, u32>,
    /// A promoted version faulting this many cycles in a row is rolled back.
    pub rollback_after: u32,
    /// Plugins promoted and not yet through a clean cycle.
    pub on_probation: Vec<String>,
    /// The counters.
    pub stats: Stats,
    /// Volcano's metrics.
    pub metrics: crate::metrics::Metrics,
    /// The latest session's opening and its plugins' time in calls, for
    /// the metrics.
    last_open: Duration,
    last_plugin_secs: Vec<(String, f64)>,
    /// The latest fault message per plugin.
    pub last_errors: BTreeMap<String, String>,
    /// What happened to plugin versions and the config, for reports and
    /// logs (cleared by the caller).
    pub notices: Vec<Notice>,
    /// Reservation targets and locked nodes, carried from cycle to cycle.
    pub reservations: Reservations,
    /// Decayed usage per queue, when the config orders by it.
    pub usage: Option<crate::usage::Ledger>,
    /// The last session, for the next one to start from.
    pub sessions: SnapshotCache,
    /// How each shadow's decisions differed from the live ones in the last cycle.
    pub shadow_diffs: Vec<ShadowDiff>,
    /// Who made each plugin's versions what they are, and what the sources declare.
    pub intent: Intent,
}

impl Scheduler {
    /// A scheduler of `config` with the plugins of `library`.
    pub fn new(config: SchedulerConfig, library: &Library) -> Self {
        let (policies, missing_plugins) = library.policies(&config, None);
        Scheduler {
            config,
            library: library.clone(),
            built_for: library.generation,
            policies: Some(policies),
            missing_plugins,
            seed: 0x5eed,
            shadows: BTreeMap::new(),
            last_snapshot: None,
            fault_streak: BTreeMap::new(),
            rollback_after: 3,
            on_probation: Vec::new(),
            stats: Stats::default(),
            last_errors: BTreeMap::new(),
            notices: Vec::new(),
            reservations: Reservations::default(),
            usage: None,
            metrics: Default::default(),
            last_open: Duration::ZERO,
            last_plugin_secs: Vec::new(),
            sessions: SnapshotCache::default(),
            shadow_diffs: Vec::new(),
            intent: Intent::default(),
        }
    }

    /// Replaces the config (already validated); takes effect next cycle.
    pub fn set_config(&mut self, config: SchedulerConfig) {
        // The cycle budget applies at once; the sandbox's own limits belong
        // to the engine, made at start.
        let (old, new) = (&self.config.limits, &config.limits);
        if (old.call_deadline_ms, old.memory_per_plugin, old.memory_total)
            != (new.call_deadline_ms, new.memory_per_plugin, new.memory_total)
        {
            self.notices.push(Notice::warn(
                "limits.callDeadline, memoryPerPlugin and memoryTotal changed: they apply at the next start",
            ));
        }
        self.config = config;
        self.built_for = u64::MAX;
    }

    fn rebuild(&mut self) {
        if self.built_for != self.library.generation {
            let (policies, missing) = self.library.policies(&self.config, None);
            self.policies = Some(policies);
            self.missing_plugins = missing;
            self.built_for = self.library.generation;
        }
    }

    /// Compiles and validates a new version of a plugin and makes it live
    /// between this cycle and the next, `origin` acting. A version failing
    /// validation never replaces the running one.
    pub fn swap(&mut self, bytes: &[u8], origin: &str) -> Result<String> {
        let compiled = WasmPlugin::load(&self.library.runtime, bytes, origin)?;
        self.swap_compiled(compiled, Actor::Source(origin.to_string()))
    }

    /// Like [`Scheduler::swap`] for a component compiled elsewhere (the watcher).
    pub fn swap_compiled(&mut self, compiled: WasmPlugin, by: Actor) -> Result<String> {
        let origin = compiled.origin_name();
        let staged = staging::validate(compiled, self.last_snapshot.as_ref(), &self.config)?;
        let name = staged.info().name.clone();
        let hash = staged.hash().to_string();
        let replaced = self.live_hash(&name);
        self.library.promote(staged);
        self.fault_streak.remove(&name);
        self.on_probation.retain(|n| *n != name);
        self.on_probation.push(name.clone());
        self.stats.swaps += 1;
        self.intent.record(&name, "live", &hash, replaced, by);
        self.notices.push(Notice::info(format!("swapped plugin {name} to version {hash} from {origin}")));
        if !self.config.plugin_names().any(|n| *n == name) {
            self.notices.push(Notice::warn(format!(
                "plugin {name} (from {origin}) is loaded but no tier of the scheduler config names it: it does nothing"
            )));
        }
        Ok(name)
    }

    /// Keeps a validated version of a plugin without running it: a declared
    /// version an admin decision keeps out (shown as rolled back from).
    pub fn hold_compiled(&mut self, compiled: WasmPlugin) -> Result<String> {
        let staged = staging::validate(compiled, self.last_snapshot.as_ref(), &self.config)?;
        let name = staged.info().name.clone();
        self.library.hold(staged, Held::RolledBackFrom);
        Ok(name)
    }

    /// Loads a shadow version of a plugin: it sees every cycle's snapshot,
    /// its decisions are compared with the live ones and never applied.
    pub fn set_shadow(&mut self, bytes: &[u8], origin: &str) -> Result<String> {
        let compiled = WasmPlugin::load(&self.library.runtime, bytes, origin)?;
        self.set_shadow_compiled(compiled, Actor::Source(origin.to_string()))
    }

    /// Like [`Scheduler::set_shadow`] for a component compiled elsewhere.
    pub fn set_shadow_compiled(&mut self, compiled: WasmPlugin, by: Actor) -> Result<String> {
        let origin = compiled.origin_name();
        let staged = staging::validate(compiled, self.last_snapshot.as_ref(), &self.config)?;
        let name = staged.info().name.clone();
        if !self.config.plugin_names().any(|n| n == name) {
            bail!("{origin}: plugin {name:?} is not in the scheduler config, so it has nothing to shadow");
        }
        let hash = staged.hash().to_string();
        self.notices.push(Notice::info(format!("shadow of plugin {name} loaded: version {hash} from {origin}")));
        self.shadows.insert(name.clone(), staged);
        let live = self.live_hash(&name);
        self.intent.record(&name, "shadow", &hash, live, by);
        Ok(name)
    }

    /// Drops the shadow of a plugin.
    pub fn drop_shadow(&mut self, name: &str, by: Actor) {
        if let Some(s) = self.shadows.remove(name) {
            let live = self.live_hash(name);
            self.intent.record(name, "drop-shadow", s.hash(), live, by);
            self.notices.push(Notice::info(format!("shadow of plugin {name} dropped")));
        }
    }

    /// Makes a shadow the live version.
    pub fn promote_shadow(&mut self, name: &str, by: Actor) -> Result<()> {
        let s = self.shadows.remove(name).ok_or_else(|| anyhow!("plugin {name}: no shadow loaded"))?;
        let hash = s.hash().to_string();
        let replaced = self.live_hash(name);
        self.library.promote(s);
        self.on_probation.retain(|n| n != name);
        self.on_probation.push(name.to_string());
        self.stats.swaps += 1;
        let act = self.intent.record(name, "promote", &hash, replaced, by);
        self.notices.push(Notice::info(format!(
            "promoted the shadow of plugin {name} (version {hash}) to live ({})",
            act.by.describe()
        )));
        Ok(())
    }

    /// Puts the previous version of a plugin back; the one it replaces is
    /// kept, so it can be rolled forward.
    pub fn rollback(&mut self, name: &str, by: Actor) -> Result<()> {
        let replaced = self.live_hash(name);
        self.library.rollback(name)?;
        self.fault_streak.remove(name);
        self.on_probation.retain(|n| n != name);
        self.stats.rollbacks += 1;
        let hash = self.live_hash(name).unwrap_or_default();
        let act = self.intent.record(name, "rollback", &hash, replaced, by);
        let level = if act.by == Actor::Faults { Level::Warn } else { Level::Info };
        self.notices.push(Notice {
            level,
            text: format!("rolled plugin {name} back to version {hash} ({})", act.by.describe()),
        });
        Ok(())
    }

    /// Puts the version a plugin was last rolled back from live again.
    pub fn forward(&mut self, name: &str, by: Actor) -> Result<()> {
        let replaced = self.live_hash(name);
        self.library.forward(name)?;
        self.on_probation.retain(|n| n != name);
        self.on_probation.push(name.to_string());
        let hash = self.live_hash(name).unwrap_or_default();
        let act = self.intent.record(name, "forward", &hash, replaced, by);
        self.notices
            .push(Notice::info(format!("rolled plugin {name} forward to version {hash} ({})", act.by.describe())));
        Ok(())
    }

    /// Makes an act decided elsewhere (another replica; this one before a
    /// restart) true here: its version live, the replaced one held. The
    /// version must be held already or come as `compiled`.
    pub fn adopt(&mut self, act: crate::intent::Act, compiled: Option<WasmPlugin>) -> Result<()> {
        let name = act.plugin.clone();
        if self.intent.latest(&name).is_some_and(|a| a.at_ms >= act.at_ms) {
            return Ok(()); // made here, or older than what was done here since
        }
        let was = if act.verb == "rollback" { Held::RolledBackFrom } else { Held::Previous };
        if self.library.version(&name, &act.version).is_none() {
            let p = compiled.ok_or_else(|| {
                anyhow!("plugin {name}: version {} ({}) is not held here", act.version, act.describe())
            })?;
            if p.hash() != act.version {
                bail!("plugin {name}: the stored component is version {}, not {}", p.hash(), act.version);
            }
            self.library.hold(p, Held::Previous);
        }
        if self.live_hash(&name).as_deref() != Some(act.version.as_str()) {
            self.library.pin(&name, &act.version, was)?;
            self.fault_streak.remove(&name);
            self.notices.push(Notice::info(format!(
                "plugin {name}: version {} live, as decided ({})",
                act.version,
                act.describe()
            )));
        }
        if act.verb == "promote" {
            self.shadows.remove(&name);
        }
        self.intent.adopt(act);
        Ok(())
    }

    /// A warning for each plugin loaded from outside (a file, a flag, a
    /// Plugin object) that no tier of the config names: it does nothing.
    pub fn warn_unused_plugins(&mut self) {
        let named: std::collections::BTreeSet<&str> = self.config.plugin_names().collect();
        let mut warnings = Vec::new();
        for name in self.library.names() {
            let Some(p) = self.library.get(name) else { continue };
            let origin = p.origin_name();
            if !named.contains(name) && !origin.starts_with("built-in ") {
                warnings.push(Notice::warn(format!(
                    "plugin {name} (from {origin}) is loaded but no tier of the scheduler config names it: it does nothing"
                )));
            }
        }
        self.notices.extend(warnings);
    }

    /// The live version (content hash) of a plugin.
    pub fn live_hash(&self, name: &str) -> Option<String> {
        self.library.get(name).map(|p| p.hash().to_string())
    }

    /// Runs one cycle over `cluster`.
    pub fn cycle(&mut self, cluster: &Cluster, overrides: &StatusOverrides, now_ms: i64) -> Outcome {
        let started = Instant::now();
        let actions = self.config.actions.clone();
        let seed = self.next_seed();
        let mut timings = Vec::new();
        let outcome = self.run(cluster, overrides, now_ms, seed, |ssn| {
            actions::timelimit::end_overruns(ssn);
            for name in &actions {
                if let Some(action) = actions::by_name(name) {
                    let t = Instant::now();
                    action(ssn);
                    timings.push((name.clone(), t.elapsed().as_secs_f64()));
                }
            }
        });
        for (name, secs) in &timings {
            let e = self.stats.actions.entry(name.clone()).or_default();
            e.0 += 1;
            e.1 += secs;
        }
        let ms = |pairs: &[(String, f64)]| -> Vec<(String, f64)> {
            pairs.iter().map(|(n, s)| (n.clone(), s * 1000.0)).collect()
        };
        let plugin_ms = ms(&self.last_plugin_secs);
        let shadows: Vec<WasmPlugin> = self.shadows.values().cloned().collect();
        self.shadow_diffs.clear();
        for shadow in shadows {
            let diff = self.shadow_cycle(cluster, overrides, now_ms, seed, &shadow, &outcome);
            self.stats.shadow_diffs += diff.count() as u64;
            for (kind, n) in diff.by_kind() {
                *self.stats.shadow_diffs_by.entry((diff.plugin.clone(), kind)).or_default() += n as u64;
            }
            self.shadow_diffs.push(diff);
        }
        self.watch_faults(&outcome);
        self.stats.cycles += 1;
        self.stats.last_cycle = started.elapsed();
        self.stats.cycle_seconds_sum += self.stats.last_cycle.as_secs_f64();
        let total_ms = self.stats.last_cycle.as_secs_f64() * 1000.0;
        self.metrics.cycle(total_ms, self.last_open.as_secs_f64() * 1000.0, &ms(&timings), &plugin_ms);
        self.metrics.outcome(cluster, &outcome, now_ms);
        for d in &outcome.decisions {
            match d {
                Decision::Bind { .. } => self.stats.binds += 1,
                Decision::Evict { .. } => self.stats.evictions += 1,
                Decision::Nominate { .. } => {}
            }
        }
        outcome
    }

    fn next_seed(&mut self) -> u64 {
        self.seed = self.seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.seed
    }

    /// The same cycle with the shadow standing in; its decisions compared.
    fn shadow_cycle(
        &mut self,
        cluster: &Cluster,
        overrides: &StatusOverrides,
        now_ms: i64,
        seed: u64,
        shadow: &WasmPlugin,
        live: &Outcome,
    ) -> ShadowDiff {
        let (policies, _) = self.library.policies(&self.config, Some(shadow));
        let actions = self.config.actions.clone();
        let mut ssn = Session::open_with(cluster, policies, overrides, now_ms, seed, &self.reservations);
        ssn.actions = actions.clone();
        ssn.action_args = self.config.action_args.clone();
        ssn.nodes_percentage = self.config.nodes_percentage();
        actions::timelimit::end_overruns(&mut ssn);
        for name in &actions {
            if let Some(action) = actions::by_name(name) {
                action(&mut ssn);
            }
        }
        let (out, _) = ssn.close();
        shadow::diff(&shadow.info().name, live, &out)
    }

    /// Opens a session, lets `f` work on it, closes it.
    pub fn inspect(
        &mut self,
        cluster: &Cluster,
        overrides: &StatusOverrides,
        now_ms: i64,
        f: impl FnOnce(&mut Session),
    ) -> Outcome {
        let seed = self.next_seed();
        self.run(cluster, overrides, now_ms, seed, f)
    }

    fn run(
        &mut self,
        cluster: &Cluster,
        overrides: &StatusOverrides,
        now_ms: i64,
        seed: u64,
        f: impl FnOnce(&mut Session),
    ) -> Outcome {
        self.rebuild();
        let policies = self.policies.take().expect("policies are returned by every session");
        // Without the reservation actions nothing holds a lock any more.
        if !self.config.actions.iter().any(|a| a == "elect" || a == "reserve") {
            self.reservations = Reservations::default();
        }
        let opening = Instant::now();
        let mut ssn =
            Session::open_cached(&mut self.sessions, cluster, policies, overrides, now_ms, seed, &self.reservations);
        self.last_open = opening.elapsed();
        self.last_snapshot = Some((ssn.snap.clone(), ssn.names.clone()));
        ssn.actions = self.config.actions.clone();
        ssn.action_args = self.config.action_args.clone();
        ssn.nodes_percentage = self.config.nodes_percentage();
        f(&mut ssn);
        let (outcome, mut policies) = ssn.close_cached(&mut self.sessions);
        self.reservations = outcome.reservations.clone();
        self.last_plugin_secs.clear();
        for (name, calls, secs) in policies.take_call_stats() {
            self.last_plugin_secs.push((name.clone(), secs));
            let e = self.stats.plugins.entry(name).or_default();
            e.0 += calls;
            e.1 += secs;
        }
        self.policies = Some(policies);
        outcome
    }

    /// Counts faults per plugin; a newly promoted version that faults
    /// `rollback_after` cycles in a row is rolled back automatically.
    fn watch_faults(&mut self, out: &Outcome) {
        let faulty: Vec<String> = out.faults.iter().map(|f| f.plugin.clone()).collect();
        for f in &out.faults {
            self.last_errors.insert(f.plugin.clone(), format!("{}: {}", f.point, f.message));
        }
        for name in self.config.plugin_names().map(String::from).collect::<Vec<_>>() {
            let e = self.stats.plugins.entry(name.clone()).or_default();
            if faulty.contains(&name) {
                e.2 += 1;
                *self.fault_streak.entry(name.clone()).or_default() += 1;
            } else {
                self.fault_streak.remove(&name);
                self.on_probation.retain(|n| *n != name);
            }
        }
        let due: Vec<String> = self
            .on_probation
            .iter()
            .filter(|n| self.fault_streak.get(*n).is_some_and(|&s| s >= self.rollback_after))
            .cloned()
            .collect();
        for name in due {
            if self.rollback(&name, Actor::Faults).is_ok() {
                self.notices.push(Notice::warn(format!(
                    "plugin {name} faulted {} cycles in a row after its promotion; rolled back",
                    self.rollback_after
                )));
            }
        }
    }
}
