//! One plugin component: compiled once, instantiated once and kept from
//! session to session while it stays healthy and small; discarded after any
//! trap. Keeping it matters at scale: a fresh instance page-faults its way
//! through all the memory the snapshot needs, every cycle.

use crate::contracts::{self, Instance, Pre};
use crate::engine::Runtime;
use crate::state::State;
use anyhow::{anyhow, bail, Result};
use std::sync::Arc;
use tephra_contract::{Event, PluginInfo, Snapshot, SnapshotDelta};
use tephra_dispatch::backend::{Answer, Backend, Call, Reasons};
use tephra_snapshot::Names;
use wasmtime::Store;

/// A policy running as a WebAssembly component.
pub struct WasmPlugin {
    runtime: Runtime,
    pre: Pre,
    info: PluginInfo,
    origin: String,
    hash: String,
    /// The component's bytes, when small enough to keep ([`KEEP_BYTES_MAX`]):
    /// a version an admin decision makes live is stored with it.
    bytes: Option<Arc<[u8]>>,
    imports: Vec<String>,
    live: Option<(Store<State>, Instance)>,
    /// The instance of the last session, for the next one.
    idle: Option<(Store<State>, Instance)>,
    /// Instances created so far.
    instantiations: u64,
    /// Sessions served by the current instance.
    sessions: u32,
    /// This session's one-node rejection reasons, by code.
    reasons: Reasons,
}

/// Components up to this size keep their bytes beside the compiled code.
pub const KEEP_BYTES_MAX: usize = 768 << 10;

/// Sessions one instance serves before it is replaced.
pub const SESSIONS_PER_INSTANCE: u32 = 1000;

/// Interface prefixes a plugin may import: the contract, a clock,
/// randomness, and the plumbing language runtimes link: stdio and
/// environment (the environment is empty and output is captured) and the
/// filesystem, which WASI preview 1 runtimes such as Go's import through the
/// adapter (no directory is ever opened to a plugin: every open fails).
pub const ALLOWED_IMPORTS: [&str; 6] =
    ["tephra:scheduler/", "wasi:clocks/", "wasi:random/", "wasi:io/", "wasi:cli/", "wasi:filesystem/"];

/// A short content hash (FNV-1a, 64 bits) identifying a component's bytes.
pub fn content_hash(bytes: &[u8]) -> String {
    let h = bytes.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3));
    format!("{h:016x}")
}

/// A one-line message for a failed call: the trap (not the backtrace).
fn fault(e: wasmtime::Error) -> String {
    if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        return trap.to_string();
    }
    // The causes, without the backtrace wasmtime adds as context.
    let causes: Vec<String> = e
        .chain()
        .filter(|c| !c.to_string().contains("wasm backtrace:"))
        .map(|c| c.to_string().split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    causes.join(": ")
}

impl WasmPlugin {
    /// Compiles and validates a component; `origin` names it in errors.
    pub fn load(runtime: &Runtime, bytes: &[u8], origin: &str) -> Result<Self> {
        let hash = content_hash(bytes);
        let component = runtime
            .compile(bytes, &hash)
            .map_err(|e| anyhow!("{origin}: not a loadable WebAssembly component: {}", fault(e)))?;
        let imports: Vec<String> =
            component.component_type().imports(&runtime.engine).map(|(name, _)| name.to_string()).collect();
        if let Some(bad) = imports.iter().find(|i| !ALLOWED_IMPORTS.iter().any(|a| i.starts_with(a))) {
            bail!(
                "{origin}: imports {bad}, which tephra does not offer to plugins (allowed: {})",
                ALLOWED_IMPORTS.map(|a| format!("{a}*")).join(", ")
            );
        }
        let version = contracts::version_of(&component).ok_or_else(|| contracts::unsupported(origin))?;
        let pre = runtime
            .linker
            .instantiate_pre(&component)
            .map_err(|e| anyhow!("{origin}: imports something the host does not offer: {}", fault(e)))?;
        let pre =
            Pre::new(version, pre).map_err(|e| anyhow!("{origin}: does not match contract {version}: {}", fault(e)))?;
        let mut store = runtime.store(origin, Arc::default());
        let instance =
            pre.instantiate(&mut store).map_err(|e| anyhow!("{origin}: instantiation failed: {}", fault(e)))?;
        let info = pre.info(&instance, &mut store).map_err(|e| anyhow!("{origin}: info() trapped: {}", fault(e)))?;
        if info.contract != version {
            bail!("{origin}: exports contract {version} but info() says it was built against {:?}", info.contract);
        }
        if info.name.is_empty() {
            bail!("{origin}: info() returned an empty plugin name");
        }
        Ok(WasmPlugin {
            runtime: runtime.clone(),
            pre,
            info,
            origin: origin.to_string(),
            hash,
            bytes: (bytes.len() <= KEEP_BYTES_MAX).then(|| Arc::from(bytes)),
            imports,
            live: None,
            idle: None,
            instantiations: 0,
            sessions: 0,
            reasons: Reasons::default(),
        })
    }

    /// The interfaces the component imports.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// Where the component came from.
    pub fn origin_name(&self) -> String {
        self.origin.clone()
    }

    /// How many instances were created for sessions so far (one, unless
    /// instances trapped, grew past half the memory cap or served
    /// [`SESSIONS_PER_INSTANCE`] sessions).
    pub fn instantiations(&self) -> u64 {
        self.instantiations
    }

    /// The content hash of the component's bytes.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The component's bytes, if it is small enough for them to be kept.
    pub fn bytes(&self) -> Option<&[u8]> {
        self.bytes.as_deref()
    }

    fn with<R>(&mut self, f: impl FnOnce(&Instance, &mut Store<State>) -> wasmtime::Result<R>) -> Result<R, String> {
        let Some((store, plugin)) = self.live.as_mut() else {
            return Err("no live instance (it trapped earlier this session)".into());
        };
        store.set_epoch_deadline(self.runtime.deadline_ticks());
        // A reason given belongs to the answer of this call only.
        store.data_mut().why = None;
        match f(plugin, store) {
            Ok(r) => Ok(r),
            Err(e) => {
                // What the guest printed (a Rust panic message) says why.
                let out = store.data().output.contents();
                let said = String::from_utf8_lossy(&out);
                let lines: Vec<&str> =
                    said.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("note: run with")).collect();
                let last = lines[lines.len().saturating_sub(2)..].join(" ");
                // A trapped instance cannot be entered again.
                self.live = None;
                let mut msg = fault(e);
                if !last.is_empty() {
                    msg = format!("{msg}; the plugin printed: {}", last.chars().take(300).collect::<String>());
                }
                Err(msg)
            }
        }
    }
}

impl Backend for WasmPlugin {
    fn info(&self) -> &PluginInfo {
        &self.info
    }

    fn origin(&self) -> &str {
        &self.origin
    }

    fn open_session(&mut self, snap: &Snapshot, names: &Arc<Names>, args: &[(String, String)]) -> Result<(), String> {
        self.reasons.clear();
        self.live = match self.idle.take() {
            Some((mut store, plugin)) => {
                store.data_mut().renew(names.clone());
                Some((store, plugin))
            }
            None => {
                let mut store = self.runtime.store(&self.info.name, names.clone());
                let plugin = self.pre.instantiate(&mut store).map_err(fault)?;
                self.instantiations += 1;
                self.sessions = 0;
                Some((store, plugin))
            }
        };
        self.with(|p, s| p.open_session(s, snap, args))?
    }

    fn update_session(
        &mut self,
        delta: &SnapshotDelta,
        names: &Arc<Names>,
        args: &[(String, String)],
    ) -> Result<bool, String> {
        // Only a kept instance can hold the last session.
        let Some((mut store, plugin)) = self.idle.take() else { return Ok(false) };
        self.reasons.clear();
        store.data_mut().renew(names.clone());
        self.live = Some((store, plugin));
        let updated = self.with(|p, s| p.update_session(s, delta, args))??;
        if !updated {
            self.idle = self.live.take();
        }
        Ok(updated)
    }

    fn close_session(&mut self) -> Result<(), String> {
        let r = self.with(|p, s| p.close_session(s));
        if let Some((store, plugin)) = self.live.take() {
            let out = store.data().output.contents();
            for line in String::from_utf8_lossy(&out).lines().filter(|l| !l.trim().is_empty()) {
                let line = tephra_model::text::one_line(line, 1 << 10);
                tracing::info!(plugin = %self.info.name, "{line}");
            }
            // Kept unless it grew past half the cap (a plugin that leaks
            // across sessions starts afresh instead of running out) or has
            // served many sessions (nothing it holds on the host side, such
            // as stream handles, accumulates for ever).
            self.sessions += 1;
            let grown = store.data().limits.grown > self.runtime.sandbox.memory_bytes / 2;
            if r.is_ok() && !grown && self.sessions < SESSIONS_PER_INSTANCE {
                self.idle = Some((store, plugin));
            }
        }
        r
    }

    fn on_events(&mut self, events: &[Event]) -> Result<(), String> {
        // One event goes by value: a list would cost a call into the guest's allocator.
        match events {
            [e] => self.with(|p, s| p.on_event(s, *e)),
            _ => self.with(|p, s| p.on_events(s, events)),
        }
    }

    fn discard(&mut self) {
        self.live = None;
        self.idle = None;
    }

    fn why(&mut self) -> Option<String> {
        self.live.as_mut().and_then(|(store, _)| store.data_mut().why.take())
    }

    fn call(&mut self, call: Call<'_>) -> Result<Answer, String> {
        // Questions about one node take the scalar forms: no list to pass,
        // no post-return call.
        match call {
            Call::Predicate(t, &[n]) => {
                let code = self.with(|p, s| p.predicate_node(s, t, n))?;
                let mut reasons = std::mem::take(&mut self.reasons);
                let r = reasons.verdict(code, |c| self.with(|p, s| p.explain(s, c)));
                self.reasons = reasons;
                return r;
            }
            Call::NodeOrder(t, &[n]) => {
                return self.with(|p, s| p.node_score(s, t, n)).map(|x| Answer::Keys(vec![x]));
            }
            _ => {}
        }
        self.with(|p, s| p.call(s, call))
    }
}

impl Clone for WasmPlugin {
    /// A second handle on the same compiled component (no live instance).
    fn clone(&self) -> Self {
        WasmPlugin {
            runtime: self.runtime.clone(),
            pre: self.pre.clone(),
            info: self.info.clone(),
            origin: self.origin.clone(),
            hash: self.hash.clone(),
            bytes: self.bytes.clone(),
            imports: self.imports.clone(),
            live: None,
            idle: None,
            instantiations: 0,
            sessions: 0,
            reasons: Reasons::default(),
        }
    }
}
