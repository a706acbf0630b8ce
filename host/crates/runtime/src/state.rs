//! What each plugin instance holds: its WASI context (empty), its memory
//! limits, the session's names, its output, and the host functions the
//! contract gives it.

use crate::output::CappedOutput;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tephra_contract::world::host::{self, Kind, Level};
use tephra_snapshot::Names;
use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime::StoreLimits;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Per-instance state: an empty WASI context (no files, env or network), the
/// memory limiter, the names of the current session, captured output.
pub struct State {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limits: Limits,
    pub(crate) plugin: String,
    pub(crate) names: Arc<Names>,
    pub(crate) output: CappedOutput,
    pub(crate) logs_left: u32,
    pub(crate) log_bytes_left: usize,
    /// Hashes of the warnings and errors already logged (by any instance):
    /// a plugin that warns every session is shown once.
    pub(crate) said: Arc<Mutex<HashSet<u64>>>,
    /// The reason the plugin gave for its current answer: a debug line
    /// starting [`WHY`] logged during the call (the SDKs' `why`).
    pub(crate) why: Option<String>,
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

/// Log lines a plugin may write per session.
pub(crate) const LOG_LINES: u32 = 1000;
/// Log bytes a plugin may write per session, and per line.
pub(crate) const LOG_BYTES: usize = 64 << 10;
const LOG_LINE_BYTES: usize = 1 << 10;
/// Distinct warnings remembered; past it the memory starts over (a warning
/// may then show again) rather than growing for ever.
pub(crate) const SAID_MAX: usize = 4096;

/// The sandbox's memory cap, and how much linear memory the instance has
/// grown into (an instance that grew large is not kept for the next session).
pub(crate) struct Limits {
    pub(crate) cap: StoreLimits,
    pub(crate) grown: usize,
    /// What all live instances hold, against `total_cap`.
    pub(crate) total: Arc<AtomicUsize>,
    pub(crate) total_cap: usize,
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
pub(crate) fn no_blocking_sleep(linker: &mut Linker<State>) -> wasmtime::Result<()> {
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
