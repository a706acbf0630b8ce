//! Engine settings in one place: component model on, async concurrency off
//! (it quadruples call cost), epoch interruption for per-call deadlines.

use super::bindings::tephra::scheduler::host::{self, Kind, Level};
use super::bindings::Plugin;
use crate::session::Names;
use anyhow::{anyhow, Result};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// How often the epoch advances.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Limits applied to every plugin instance.
#[derive(Clone, Copy, Debug)]
pub struct Sandbox {
    /// CPU time one call may take before it is interrupted.
    pub call_deadline: Duration,
    /// Linear memory an instance may grow to.
    pub memory_bytes: usize,
    /// Bytes of stdout/stderr kept per session.
    pub output_bytes: usize,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox { call_deadline: Duration::from_secs(2), memory_bytes: 256 << 20, output_bytes: 64 << 10 }
    }
}

/// Per-instance state: an empty WASI context (no files, env or network), the
/// memory limiter, the names of the current session, captured output.
pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: StoreLimits,
    pub(super) plugin: String,
    pub(super) names: Arc<Names>,
    pub(super) output: MemoryOutputPipe,
    logs_left: u32,
    /// Warnings and errors already logged (by any instance): a plugin that
    /// warns every session is shown once.
    said: Arc<Mutex<HashSet<String>>>,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl super::bindings::tephra::scheduler::types::Host for State {}

impl host::Host for State {
    fn log(&mut self, level: Level, message: String) {
        // Rate-limited: a chatty plugin cannot flood the scheduler's log.
        if self.logs_left == 0 {
            return;
        }
        self.logs_left -= 1;
        let p = &self.plugin;
        if matches!(level, Level::Error | Level::Warn) {
            let key = format!("{p}\0{message}");
            let mut said = self.said.lock().unwrap_or_else(|e| e.into_inner());
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
    said: Arc<Mutex<HashSet<String>>>,
}

impl Runtime {
    pub fn new(sandbox: Sandbox) -> Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.concurrency_support(false);
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
        Ok(Runtime { engine, linker: Arc::new(linker), sandbox, said: Arc::default() })
    }

    /// Fresh state for one instance of `plugin`.
    pub(super) fn state(&self, plugin: &str, names: Arc<Names>) -> State {
        let output = MemoryOutputPipe::new(self.sandbox.output_bytes);
        let wasi = WasiCtxBuilder::new().stdout(output.clone()).stderr(output.clone()).build();
        State {
            wasi,
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new().memory_size(self.sandbox.memory_bytes).trap_on_grow_failure(true).build(),
            plugin: plugin.to_string(),
            names,
            output,
            logs_left: 1000,
            said: self.said.clone(),
        }
    }

    /// The per-call deadline in epoch ticks.
    pub(super) fn deadline_ticks(&self) -> u64 {
        (self.sandbox.call_deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
    }
}
