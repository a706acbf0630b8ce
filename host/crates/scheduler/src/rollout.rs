//! Plugin versions a driver declares (in `tephra run`, Plugin objects):
//! components compiled off the loop, then made live, loaded as shadows,
//! promoted or rolled back between two cycles, each with its outcome
//! reported back to the driver under the key it gave.

use crate::intent::{Act, Actor, Declared};
use crate::scheduler::Scheduler;
use anyhow::{bail, Result};
use std::sync::mpsc::{channel, Receiver, Sender};
use tephra_dispatch::backend::Backend;
use tephra_runtime::{Runtime, WasmPlugin};

/// What to do with a plugin, between two cycles.
pub enum Change {
    /// Compile `bytes` and make them the live version of `plugin`.
    Live {
        /// The component.
        bytes: Vec<u8>,
    },
    /// Compile `bytes` and run them as the shadow of `plugin`.
    Shadow {
        /// The component.
        bytes: Vec<u8>,
    },
    /// The shadow of `plugin` goes live.
    Promote,
    /// The previous version of `plugin` comes back.
    Rollback,
    /// The shadow of `plugin` goes away.
    DropShadow,
    /// The declaration goes away (its object was deleted); what runs stays.
    Undeclare,
    /// A decision made elsewhere (another replica, or before a restart) is
    /// made true here; `bytes` carry its version when this replica may not
    /// hold it.
    Adopt {
        /// The decision.
        act: Act,
        /// Its version's component, when this replica may not hold it.
        bytes: Option<Vec<u8>>,
    },
}

/// One declared change, by the driver's key (its object).
pub struct Rollout {
    /// The driver's key for it (its object).
    pub key: String,
    /// The plugin name the declaration claims: a component calling itself
    /// otherwise is refused.
    pub plugin: String,
    /// Where the component came from, for messages.
    pub origin: String,
    /// Who declares it (`Plugin prefer`), and the declaration as of now
    /// (`Plugin prefer@3`: a new generation is a new declaration).
    pub source: String,
    /// See [`Rollout::source`].
    pub declaration: String,
    /// What to do.
    pub change: Change,
}

/// What became of a [`Rollout`].
pub struct Rolled {
    /// The [`Rollout::key`].
    pub key: String,
    /// The version now live or shadowing (its content hash), or why not.
    pub result: Result<String, String>,
    /// The admin decision that keeps the declared version out, when one
    /// does (the version is held, not run).
    pub held_by: Option<Act>,
}

/// A component compiled off the loop.
struct Compiled {
    rollout: Rollout,
    plugin: Result<WasmPlugin>,
}

/// Compiles declared components on a background thread, so no cycle waits
/// for Cranelift; the rest lands between cycles in [`Rollouts::apply`].
pub struct Rollouts {
    jobs: Sender<Rollout>,
    done: Receiver<Compiled>,
    /// Changes that need no compile, applied at the next boundary.
    direct: Vec<Rollout>,
}

impl Rollouts {
    /// The worker compiling declared versions off the loop, with `runtime`.
    pub fn spawn(runtime: Runtime) -> Result<Rollouts> {
        let (jobs, rx) = channel::<Rollout>();
        let (tx, done) = channel();
        std::thread::Builder::new().name("tephra-rollout-compile".into()).spawn(move || {
            for r in rx {
                let bytes = match &r.change {
                    Change::Live { bytes } | Change::Shadow { bytes } => bytes.as_slice(),
                    Change::Adopt { bytes: Some(bytes), .. } => bytes.as_slice(),
                    _ => &[],
                };
                let plugin = WasmPlugin::load(&runtime, bytes, &r.origin);
                if tx.send(Compiled { rollout: r, plugin }).is_err() {
                    return;
                }
            }
        })?;
        Ok(Rollouts { jobs, done, direct: Vec::new() })
    }

    /// Queues `r`: a component is compiled now, everything lands between cycles.
    pub fn submit(&mut self, r: Rollout) {
        match &r.change {
            Change::Live { .. } | Change::Shadow { .. } | Change::Adopt { bytes: Some(_), .. } => {
                let _ = self.jobs.send(r);
            }
            _ => self.direct.push(r),
        }
    }

    /// Applies what is ready to `sched`; what happened to each.
    pub fn apply(&mut self, sched: &mut Scheduler) -> Vec<Rolled> {
        let mut out = Vec::new();
        for c in self.done.try_iter().collect::<Vec<_>>() {
            let r = c.rollout;
            let mut held_by = None;
            let result = match r.change {
                // A stored component that does not compile here is no
                // reason to refuse what this replica already holds.
                Change::Adopt { act, .. } => sched.adopt(act, c.plugin.ok()).map(|_| live_hash(sched, &r.plugin)),
                _ => c.plugin.and_then(|p| land(sched, &r, p, &mut held_by)),
            };
            out.push(Rolled { key: r.key, result: result.map_err(|e| one_line(&e)), held_by });
        }
        for r in std::mem::take(&mut self.direct) {
            let name = r.plugin.as_str();
            let by = Actor::Source(r.source.clone());
            let result = match r.change {
                Change::Promote => sched.promote_shadow(name, by).map(|_| live_hash(sched, name)),
                Change::Rollback => sched.rollback(name, by).map(|_| live_hash(sched, name)),
                Change::DropShadow => {
                    sched.drop_shadow(name, by);
                    Ok(String::new())
                }
                Change::Undeclare => {
                    sched.intent.declare(&r.source, None);
                    Ok(String::new())
                }
                Change::Adopt { act, .. } => sched.adopt(act, None).map(|_| live_hash(sched, name)),
                Change::Live { .. } | Change::Shadow { .. } => unreachable!("compiled first"),
            };
            out.push(Rolled { key: r.key, result: result.map_err(|e| one_line(&e)), held_by: None });
        }
        out
    }
}

fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}").replace('\n', " ")
}

fn live_hash(sched: &Scheduler, name: &str) -> String {
    sched.library.get(name).map(|p| p.hash().to_string()).unwrap_or_default()
}

/// A compiled component made live or a shadow, when it is the plugin the
/// declaration names — or held, not run, where an admin decision made
/// over this very declaration stands (`held_by` says which).
fn land(sched: &mut Scheduler, r: &Rollout, p: WasmPlugin, held_by: &mut Option<Act>) -> Result<String> {
    let name = p.info().name.clone();
    if name != r.plugin {
        bail!("{}: the component calls itself {name:?}, not {:?}", r.origin, r.plugin);
    }
    let hash = p.hash().to_string();
    let shadow = matches!(r.change, Change::Shadow { .. });
    let declared = Declared {
        plugin: name.clone(),
        source: r.source.clone(),
        version: hash.clone(),
        shadow,
        key: r.declaration.clone(),
    };
    sched.intent.declare(&r.source, Some(declared));
    if let Some(act) = sched.intent.held_by_admin(&name, &r.declaration).cloned() {
        if !shadow && act.version != hash {
            sched.hold_compiled(p)?;
            *held_by = Some(act);
            return Ok(hash);
        }
    }
    let by = Actor::Source(r.source.clone());
    if shadow {
        sched.set_shadow_compiled(p, by)?;
    } else if sched.live_hash(&name).as_deref() != Some(hash.as_str()) {
        sched.swap_compiled(p, by)?;
    }
    Ok(hash)
}
