//! What the loop shares with an admin surface: commands it applies between
//! two cycles (so a swap never lands mid-cycle), and the state it publishes
//! after each cycle. The surface itself (HTTP, authentication) lives above.

use crate::queues::QueueRow;
use crate::scheduler::{Scheduler, Stats};
use serde::Serialize;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use tephra_dispatch::backend::Backend;
use tephra_runtime::WasmPlugin;

/// What a request asks of a plugin's versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Make the shadow live.
    Promote,
    /// Put the previous version back (the current one stays held).
    Rollback,
    /// Put the version last rolled back from live again.
    Forward,
}

impl Verb {
    /// The verb a request names (`promote`, `rollback`, `forward`).
    pub fn parse(s: &str) -> Option<Verb> {
        Some(match s {
            "promote" => Verb::Promote,
            "rollback" => Verb::Rollback,
            "forward" => Verb::Forward,
            _ => return None,
        })
    }
}

/// A request to change plugin versions, by someone.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    /// What to do.
    pub verb: Verb,
    /// To which plugin.
    pub plugin: String,
    /// Who asks (as the admin surface authenticated them).
    pub who: String,
}

/// Why a [`Command`] was not carried out.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// No plugin of that name is loaded.
    NotFound(String),
    /// The plugin is there but the change cannot be made (no shadow, no
    /// earlier version).
    Conflict(String),
}

/// Where the answer to a [`Command`] goes.
pub type Reply = Sender<Result<String, Refusal>>;

/// One row of the plugin table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PluginRow {
    /// The plugin's name.
    pub name: String,
    /// The version its `info` gives.
    pub version: String,
    /// The component's content hash.
    pub hash: String,
    /// Where it came from (built in, a file, a Plugin object).
    pub origin: String,
    /// `live`, `shadow`, `previous` (a rollback brings it back) or
    /// `rolled-back-from` (a roll-forward brings it back).
    pub state: &'static str,
    /// Its faults since it was loaded.
    pub faults: u64,
    /// Its last fault's message.
    pub last_error: Option<String>,
    /// On the live row: the latest act on the plugin (`rollback by admin
    /// alice at …`), and where a source declares otherwise, one line each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided: Option<String>,
    /// Where sources declare otherwise than what runs, one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<String>,
}

/// A driver's own figure (a gauge or a counter) for the metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The metric's name.
    pub name: &'static str,
    /// Its help line.
    pub help: &'static str,
    /// A counter (else a gauge).
    pub counter: bool,
    /// Its value now.
    pub value: f64,
}

/// The state published after each cycle (or cycle sat out).
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// A cycle has completed.
    pub ready: bool,
    /// The scheduler's counters.
    pub stats: Stats,
    /// The plugin table.
    pub plugins: Vec<PluginRow>,
    /// Each queue's figures.
    pub queues: Vec<QueueRow>,
    /// The driver's own figures.
    pub figures: Vec<Figure>,
    /// Volcano's metrics, as the loop records them.
    pub metrics: Option<crate::metrics::Metrics>,
}

/// The loop's end: commands to apply, and where to publish.
pub struct Control {
    commands: Receiver<(Command, Reply)>,
    status: Arc<Mutex<Status>>,
}

/// The surface's end: send commands, read the published state.
#[derive(Clone)]
pub struct Handle {
    commands: Sender<(Command, Reply)>,
    status: Arc<Mutex<Status>>,
}

/// A connected pair.
pub fn channel_pair() -> (Control, Handle) {
    let (tx, rx) = channel();
    let status = Arc::new(Mutex::new(Status::default()));
    (Control { commands: rx, status: status.clone() }, Handle { commands: tx, status })
}

impl Handle {
    /// The latest published state.
    pub fn status(&self) -> Status {
        self.status.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Queues a command; the answer arrives on the returned receiver once the
    /// loop reaches a cycle boundary. `None`: the loop is gone.
    pub fn send(&self, cmd: Command) -> Option<Receiver<Result<String, Refusal>>> {
        let (tx, rx) = channel();
        self.commands.send((cmd, tx)).ok().map(|_| rx)
    }
}

impl Control {
    /// Applies queued commands to the scheduler (between cycles).
    pub fn apply(&self, sched: &mut Scheduler) {
        for (cmd, reply) in self.commands.try_iter() {
            let r = execute(sched, &cmd);
            // The table reflects the change before the caller hears back.
            self.status.lock().unwrap_or_else(|e| e.into_inner()).plugins = plugin_rows(sched);
            let _ = reply.send(r);
        }
    }

    /// Publishes the plugin table alone.
    pub fn list_plugins(&self, sched: &Scheduler) {
        self.status.lock().unwrap_or_else(|e| e.into_inner()).plugins = plugin_rows(sched);
    }

    /// Publishes the scheduler's state; `ready` once a cycle has completed.
    pub fn publish(&self, sched: &Scheduler, ready: bool, queues: Vec<QueueRow>, figures: Vec<Figure>) {
        let mut s = self.status.lock().unwrap_or_else(|e| e.into_inner());
        s.ready |= ready;
        s.stats = sched.stats.clone();
        s.plugins = plugin_rows(sched);
        s.queues = queues;
        s.figures = figures;
        s.metrics = Some(sched.metrics.clone());
    }
}

/// Carries out one admin command on the scheduler.
fn execute(sched: &mut Scheduler, cmd: &Command) -> Result<String, Refusal> {
    let name = cmd.plugin.as_str();
    if !sched.library.has(name) {
        return Err(Refusal::NotFound(format!("no plugin {name} is loaded")));
    }
    let by = crate::intent::Actor::Admin(cmd.who.clone());
    let done = match cmd.verb {
        Verb::Promote => sched.promote_shadow(name, by).map(|_| format!("promoted the shadow of {name}")),
        Verb::Rollback => sched.rollback(name, by).map(|_| format!("rolled {name} back")),
        Verb::Forward => sched.forward(name, by).map(|_| format!("rolled {name} forward")),
    };
    let live = sched.live_hash(name).unwrap_or_default();
    done.map(|m| format!("{m}: version {live} is live")).map_err(|e| Refusal::Conflict(e.to_string()))
}

/// Every version the scheduler holds: live, shadows, and those held.
pub fn plugin_rows(sched: &Scheduler) -> Vec<PluginRow> {
    let row = |p: &WasmPlugin, state: &'static str| {
        let name = p.info().name.clone();
        PluginRow {
            version: p.info().version.clone(),
            hash: p.hash().to_string(),
            origin: p.origin().to_string(),
            state,
            faults: sched.stats.plugins.get(&name).map_or(0, |s| s.2),
            last_error: sched.last_errors.get(&name).cloned(),
            decided: None,
            drift: Vec::new(),
            name,
        }
    };
    let mut rows = Vec::new();
    for name in sched.library.names() {
        if let Some(p) = sched.library.get(name) {
            let mut live = row(p, "live");
            live.decided = sched.intent.latest(name).map(crate::intent::Act::describe);
            let shadow = sched.shadows.get(name).map(|s| s.hash());
            live.drift = sched.intent.drift(name, Some(p.hash()), shadow);
            rows.push(live);
        }
        rows.extend(sched.shadows.get(name).map(|p| row(p, "shadow")));
        rows.extend(sched.library.held(name).iter().rev().map(|(p, h)| row(p, h.name())));
    }
    // A shadow with no live version beside it (none of its name is loaded).
    rows.extend(sched.shadows.iter().filter(|(n, _)| !sched.library.has(n)).map(|(_, p)| row(p, "shadow")));
    rows
}
