//! Engine settings in one place: component model on, async concurrency off
//! (it quadruples call cost), epoch interruption for per-call deadlines.

use crate::output::CappedOutput;
use anyhow::{anyhow, Result};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tephra_contract::world::host::{self, Kind, Level};
use tephra_contract::world::Plugin;
use tephra_model::snapshot::Names;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, StoreLimits, StoreLimitsBuilder};
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
            output_bytes: 64 << 10,
            cache_dir: default_cache_dir(),
        }
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
}

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
}

impl wasmtime::ResourceLimiter for Limits {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.cap.memory_growing(current, desired, maximum)?;
        if allowed {
            self.grown += desired.saturating_sub(current);
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

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl tephra_contract::types::Host for State {}

impl host::Host for State {
    fn log(&mut self, level: Level, message: String) {
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

/// The engine and linker shared by all plugins.
#[derive(Clone)]
pub struct Runtime {
    pub(super) engine: Engine,
    pub(super) linker: Arc<Linker<State>>,
    pub(super) sandbox: Sandbox,
    said: Arc<Mutex<HashSet<u64>>>,
    /// Compiled components by content hash: a version seen before is not
    /// compiled again (repeated swaps, rollbacks, many schedulers).
    compiled: Arc<Mutex<HashMap<String, Component>>>,
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
        if let Some(dir) = &sandbox.cache_dir {
            let mut cache = wasmtime::CacheConfig::new();
            cache.with_directory(dir);
            match wasmtime::Cache::new(cache) {
                Ok(c) => {
                    config.cache(Some(c));
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
        Plugin::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s)
            .map_err(|e| anyhow!("linking host interface: {e}"))?;
        Ok(Runtime { engine, linker: Arc::new(linker), sandbox, said: Arc::default(), compiled: Arc::default() })
    }

    /// Fresh state for one instance of `plugin`.
    pub(super) fn state(&self, plugin: &str, names: Arc<Names>) -> State {
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
            },
            plugin: plugin.to_string(),
            names,
            output,
            logs_left: LOG_LINES,
            log_bytes_left: LOG_BYTES,
            said: self.said.clone(),
        }
    }

    /// Compiles `bytes`, or returns the component compiled earlier from the
    /// same bytes.
    pub(super) fn compile(&self, bytes: &[u8], hash: &str) -> wasmtime::Result<Component> {
        if let Some(c) = self.compiled.lock().unwrap_or_else(|e| e.into_inner()).get(hash) {
            return Ok(c.clone());
        }
        let c = Component::new(&self.engine, bytes)?;
        self.compiled.lock().unwrap_or_else(|e| e.into_inner()).insert(hash.to_string(), c.clone());
        Ok(c)
    }

    /// The per-call deadline in epoch ticks.
    pub(super) fn deadline_ticks(&self) -> u64 {
        (self.sandbox.call_deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
    }
}
