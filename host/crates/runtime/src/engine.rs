//! Engine settings in one place: component model on, async concurrency off
//! (it quadruples call cost), epoch interruption for per-call deadlines.

use crate::output::CappedOutput;
use anyhow::{anyhow, Result};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tephra_contract::world::host::{self, Kind, Level};
use tephra_model::snapshot::Names;
use wasmtime::component::{Component, Linker, Resource, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// How often the epoch advances.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Limits applied to every plugin instance.
#[derive(Clone, Debug)]
pub struct Sandbox {
    /// CPU time one call may take before it is interrupted.
    pub call_deadline: Duration,
    /// Linear memory an instance may grow to.
    pub memory_bytes: usize,
    /// Linear memory all instances together may grow to (plugins each
    /// under their cap could otherwise add up past the container's limit).
    pub total_memory_bytes: usize,
    /// Bytes of stdout/stderr kept per session.
    pub output_bytes: usize,
    /// Where compiled components are cached by content (none: no disk cache).
    pub cache_dir: Option<std::path::PathBuf>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            call_deadline: Duration::from_secs(2),
            memory_bytes: 256 << 20,
            total_memory_bytes: 1 << 30,
            output_bytes: 64 << 10,
            cache_dir: default_cache_dir(),
        }
    }
}

impl Sandbox {
    /// The defaults with the config's `limits:` applied.
    pub fn configured(limits: &tephra_model::config::Limits) -> Self {
        let mut s = Sandbox::default();
        if let Some(ms) = limits.call_deadline_ms {
            s.call_deadline = Duration::from_millis(ms as u64);
        }
        s.memory_bytes = limits.memory_per_plugin.unwrap_or(s.memory_bytes);
        s.total_memory_bytes = limits.memory_total.unwrap_or(s.total_memory_bytes);
        s
    }
}

/// `$TEPHRA_CACHE_DIR`, else `$XDG_CACHE_HOME/tephra/wasm`, else
/// `$HOME/.cache/tephra/wasm`.
pub fn default_cache_dir() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("TEPHRA_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("tephra/wasm")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/tephra/wasm")))
}

/// Per-instance state: an empty WASI context (no files, env or network), the
/// memory limiter, the names of the current session, captured output.
pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: Limits,
    pub(super) plugin: String,
    pub(super) names: Arc<Names>,
    pub(super) output: CappedOutput,
    logs_left: u32,
    log_bytes_left: usize,
    /// Hashes of the warnings and errors already logged (by any instance):
    /// a plugin that warns every session is shown once.
    said: Arc<Mutex<HashSet<u64>>>,
    /// The reason the plugin gave for its current answer: a debug line
    /// starting [`WHY`] logged during the call (the SDKs' `why`).
    pub(super) why: Option<String>,
}

/// A log line with this prefix, at debug level, is the reason for the
/// answer being given (a refusal, say) rather than a line for the log.
pub const WHY: &str = "why: ";

impl State {
    /// Readies a kept instance for another session: the new session's
    /// names, an empty output buffer, a fresh log allowance.
    pub(super) fn renew(&mut self, names: Arc<Names>) {
        self.names = names;
        self.output.clear();
        self.logs_left = LOG_LINES;
        self.log_bytes_left = LOG_BYTES;
    }
}

/// Compiled components remembered by content hash.
const COMPILED_MAX: usize = 64;

/// Log lines a plugin may write per session.
const LOG_LINES: u32 = 1000;
/// Log bytes a plugin may write per session, and per line.
const LOG_BYTES: usize = 64 << 10;
const LOG_LINE_BYTES: usize = 1 << 10;
/// Distinct warnings remembered; past it the memory starts over (a warning
/// may then show again) rather than growing for ever.
const SAID_MAX: usize = 4096;

/// The sandbox's memory cap, and how much linear memory the instance has
/// grown into (an instance that grew large is not kept for the next session).
pub(super) struct Limits {
    cap: StoreLimits,
    pub(super) grown: usize,
    /// What all live instances hold, against `total_cap`.
    total: Arc<AtomicUsize>,
    total_cap: usize,
}

impl wasmtime::ResourceLimiter for Limits {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.cap.memory_growing(current, desired, maximum)?;
        if allowed {
            let more = desired.saturating_sub(current);
            let before = self.total.fetch_add(more, Ordering::Relaxed);
            if before + more > self.total_cap {
                self.total.fetch_sub(more, Ordering::Relaxed);
                let (total, cap) = (before >> 20, self.total_cap >> 20);
                wasmtime::bail!(
                    "plugins together hold {total} MiB; growing by {} MiB would pass their {cap} MiB budget",
                    more >> 20
                );
            }
            self.grown += more;
        }
        Ok(allowed)
    }
    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.cap.memory_grow_failed(error)
    }
    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.cap.table_growing(current, desired, maximum)
    }
    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.cap.table_grow_failed(error)
    }
    fn instances(&self) -> usize {
        self.cap.instances()
    }
    fn tables(&self) -> usize {
        self.cap.tables()
    }
    fn memories(&self) -> usize {
        self.cap.memories()
    }
}

impl Drop for Limits {
    /// A dropped instance gives its memory back to the budget.
    fn drop(&mut self) {
        self.total.fetch_sub(self.grown, Ordering::Relaxed);
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl tephra_contract::types::Host for State {}

/// Earlier contracts' host interfaces: the same functions, their own enums.
macro_rules! legacy_host {
    ($v:ident) => {
        impl tephra_contract::world::$v::host::Host for State {
            fn log(&mut self, level: tephra_contract::world::$v::host::Level, message: String) {
                use tephra_contract::world::$v::host::Level as L;
                let level = match level {
                    L::Error => Level::Error,
                    L::Warn => Level::Warn,
                    L::Info => Level::Info,
                    L::Debug => Level::Debug,
                };
                host::Host::log(self, level, message)
            }

            fn name(&mut self, kind: tephra_contract::world::$v::host::Kind, id: u32) -> String {
                use tephra_contract::world::$v::host::Kind as K;
                let kind = match kind {
                    K::Node => Kind::Node,
                    K::Queue => Kind::Queue,
                    K::Job => Kind::Job,
                    K::Task => Kind::Task,
                };
                host::Host::name(self, kind, id)
            }
        }
    };
}
legacy_host!(v0_6);
legacy_host!(v0_5);
legacy_host!(v0_4);

impl host::Host for State {
    fn log(&mut self, level: Level, message: String) {
        if let (Level::Debug, Some(why)) = (level, message.strip_prefix(WHY)) {
            self.why = Some(tephra_model::text::one_line(why, LOG_LINE_BYTES).into_owned());
            return;
        }
        // Rate-limited by lines and bytes: a chatty plugin cannot flood the
        // scheduler's log, and one line cannot forge others.
        if self.logs_left == 0 || self.log_bytes_left == 0 {
            return;
        }
        self.logs_left -= 1;
        let message = tephra_model::text::one_line(&message, LOG_LINE_BYTES.min(self.log_bytes_left));
        self.log_bytes_left = self.log_bytes_left.saturating_sub(message.len());
        let p = &self.plugin;
        if matches!(level, Level::Error | Level::Warn) {
            let key = {
                use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
                BuildHasherDefault::<DefaultHasher>::default().hash_one((p, &message))
            };
            let mut said = self.said.lock().unwrap_or_else(|e| e.into_inner());
            if said.len() >= SAID_MAX {
                said.clear();
            }
            if !said.insert(key) {
                return;
            }
        }
        match level {
            Level::Error => tracing::error!(plugin = %p, "{message}"),
            Level::Warn => tracing::warn!(plugin = %p, "{message}"),
            Level::Info => tracing::info!(plugin = %p, "{message}"),
            Level::Debug => tracing::debug!(plugin = %p, "{message}"),
        }
    }

    fn name(&mut self, kind: Kind, id: u32) -> String {
        let list = match kind {
            Kind::Node => &self.names.nodes,
            Kind::Queue => &self.names.queues,
            Kind::Job => &self.names.jobs,
            Kind::Task => &self.names.tasks,
        };
        list.get(id as usize).cloned().unwrap_or_else(|| format!("<no {kind:?} {id}>"))
    }
}

/// A timer that is ready at once.
struct Elapsed;

#[wasmtime_wasi::async_trait]
impl wasmtime_wasi::p2::Pollable for Elapsed {
    async fn ready(&mut self) {}
}

/// Replaces the monotonic clock's timers with ones that are ready at once:
/// a plugin cannot sleep. A host thread blocked in a sleep runs no guest
/// code, so the epoch deadline could not interrupt it; now a plugin that
/// waits spins in its own code, and the deadline stops it.
fn no_blocking_sleep(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::{subscribe, DynPollable};
    linker.allow_shadowing(true);
    let mut clock = linker.instance("wasi:clocks/monotonic-clock@0.2.12")?;
    let elapsed = |mut store: wasmtime::StoreContextMut<'_, State>| -> wasmtime::Result<(Resource<DynPollable>,)> {
        let table = &mut store.data_mut().table;
        let timer = table.push(Elapsed)?;
        Ok((subscribe(table, timer)?,))
    };
    clock.func_wrap("subscribe-duration", move |store, (_,): (u64,)| elapsed(store))?;
    clock.func_wrap("subscribe-instant", move |store, (_,): (u64,)| elapsed(store))?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The engine and linker shared by all plugins.
#[derive(Clone)]
pub struct Runtime {
    pub(super) engine: Engine,
    pub(super) linker: Arc<Linker<State>>,
    pub(super) sandbox: Sandbox,
    said: Arc<Mutex<HashSet<u64>>>,
    /// Linear memory all instances hold (the total budget's count).
    held: Arc<AtomicUsize>,
    /// Compiled components by content hash: a version seen before is not
    /// compiled again (repeated swaps, rollbacks, many schedulers).
    compiled: Arc<Mutex<HashMap<String, Component>>>,
    /// The on-disk cache of compiled code (a restart does not compile again).
    disk: Option<wasmtime::Cache>,
}

impl Runtime {
    pub fn new(sandbox: Sandbox) -> Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.concurrency_support(false);
        // `perf` names guest functions from /tmp/perf-<pid>.map when asked.
        if std::env::var_os("TEPHRA_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        // Compiled code is cached on disk by content: restarts do not recompile.
        let mut disk = None;
        if let Some(dir) = &sandbox.cache_dir {
            let mut cache = wasmtime::CacheConfig::new();
            cache.with_directory(dir);
            match wasmtime::Cache::new(cache) {
                Ok(c) => {
                    config.cache(Some(c.clone()));
                    disk = Some(c);
                }
                Err(e) => tracing::warn!("compiled-plugin cache in {} disabled: {e}", dir.display()),
            }
        }
        let engine = Engine::new(&config).map_err(|e| anyhow!("wasm engine: {e}"))?;
        let weak = engine.weak();
        std::thread::Builder::new().name("tephra-epoch".into()).spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(|e| anyhow!("linking WASI: {e}"))?;
        no_blocking_sleep(&mut linker).map_err(|e| anyhow!("linking the clock: {e}"))?;
        crate::contracts::link(&mut linker)?;
        Ok(Runtime {
            engine,
            linker: Arc::new(linker),
            sandbox,
            said: Arc::default(),
            held: Arc::default(),
            compiled: Arc::default(),
            disk,
        })
    }

    /// Reads of the on-disk cache of compiled code so far: (hits, misses);
    /// `None` without a cache.
    pub fn disk_cache_reads(&self) -> Option<(usize, usize)> {
        self.disk.as_ref().map(|c| (c.cache_hits(), c.cache_misses()))
    }

    /// Bytes of linear memory all instances of this runtime hold now.
    pub fn memory_held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// A store for one instance of `plugin`, under every limit: memory (its
    /// own and the total), the call deadline. The only way stores are made,
    /// so the instance made at load time is limited too.
    pub(super) fn store(&self, plugin: &str, names: Arc<Names>) -> Store<State> {
        let mut store = Store::new(&self.engine, self.state(plugin, names));
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(self.deadline_ticks());
        store
    }

    /// Fresh state for one instance of `plugin`.
    fn state(&self, plugin: &str, names: Arc<Names>) -> State {
        let output = CappedOutput::new(self.sandbox.output_bytes);
        let wasi = WasiCtxBuilder::new().stdout(output.clone()).stderr(output.clone()).build();
        State {
            wasi,
            table: ResourceTable::new(),
            limits: Limits {
                cap: StoreLimitsBuilder::new()
                    .memory_size(self.sandbox.memory_bytes)
                    .trap_on_grow_failure(true)
                    .build(),
                grown: 0,
                total: self.held.clone(),
                total_cap: self.sandbox.total_memory_bytes,
            },
            plugin: plugin.to_string(),
            names,
            output,
            logs_left: LOG_LINES,
            log_bytes_left: LOG_BYTES,
            said: self.said.clone(),
            why: None,
        }
    }

    /// Compiles `bytes`, or returns the component compiled earlier from the
    /// same bytes.
    pub(super) fn compile(&self, bytes: &[u8], hash: &str) -> wasmtime::Result<Component> {
        if let Some(c) = self.compiled.lock().unwrap_or_else(|e| e.into_inner()).get(hash) {
            return Ok(c.clone());
        }
        let c = Component::new(&self.engine, bytes)?;
        let mut compiled = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: a stream of new versions (or of rejected ones) must not
        // grow the host for ever. Versions in use hold their own handle;
        // forgetting costs at most a compile, or a read of the disk cache.
        if compiled.len() >= COMPILED_MAX {
            compiled.clear();
        }
        compiled.insert(hash.to_string(), c.clone());
        Ok(c)
    }

    /// The per-call deadline in epoch ticks.
    pub(super) fn deadline_ticks(&self) -> u64 {
        (self.sandbox.call_deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
    }
}
