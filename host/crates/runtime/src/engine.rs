//! Engine settings in one place: component model on, async concurrency off
//! (it quadruples call cost), epoch interruption for per-call deadlines.

use crate::output::CappedOutput;
use crate::state::{no_blocking_sleep, Limits, State, LOG_BYTES, LOG_LINES};
use anyhow::{anyhow, Result};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tephra_snapshot::Names;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimitsBuilder};
use wasmtime_wasi::WasiCtxBuilder;

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
    pub fn configured(limits: &tephra_readers::config::Limits) -> Self {
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

/// Compiled components remembered by content hash.
const COMPILED_MAX: usize = 64;

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
    /// An engine and linker whose every instance lives inside `sandbox`.
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
