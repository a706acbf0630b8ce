//! The policy dispatcher: asks every plugin that implements an extension
//! point (and whose enable switch is on) and combines the answers across tiers
//! exactly as Volcano's `session_plugins.go` does (reference §5).
//!
//! A plugin that traps, times out or answers out of contract is reported as a
//! [`Fault`] and is down for the rest of the session; the cycle goes on. A
//! down plugin fails closed by default: at every gate it implements it
//! refuses ([`Reply::Closed`]); `faultPolicy: skip` lets it abstain instead.

use crate::backend::{Answer, Backend, Call, MESSAGE_BYTES};
use std::collections::HashSet;
use std::sync::Arc;
use tephra_contract::{Event, ExtensionPoint as P, LockOwner, Snapshot, SnapshotDelta, Vote};
use tephra_model::text::one_line;
use tephra_readers::config::PluginConf;
use tephra_snapshot::{Extra, Names};

/// The enable switch gating an extension point; `None` = always consulted.
pub fn switch_for(point: P) -> Option<&'static str> {
    Some(match point {
        P::QueueOrder => "enableQueueOrder",
        P::JobOrder => "enableJobOrder",
        P::TaskOrder => "enableTaskOrder",
        P::Predicate => "enablePredicate",
        P::NodeOrder => "enableNodeOrder",
        P::HypernodeOrder => "enabledHyperNodeOrder",
        P::Overused => "enabledOverused",
        P::Allocatable => "enabledAllocatable",
        P::Preemptive => "enablePreemptive",
        P::JobReady => "enableJobReady",
        P::JobPipelined => "enableJobPipelined",
        P::JobEnqueueable | P::JobEnqueued => "enableJobEnqueued",
        P::JobStarving => "enableJobStarving",
        P::Preemptable => "enablePreemptable",
        P::Reclaimable => "enableReclaimable",
        P::VictimTasks => "enabledVictim",
        P::TargetJob => "enableTargetJob",
        P::ReservedNodes => "enableReservedNodes",
        P::VictimQueueOrder | P::JobValid | P::QueueStatus | P::Evictable | P::Events => return None,
    })
}

/// A plugin misbehaving during a session.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    /// The plugin's name.
    pub plugin: String,
    /// The extension point (or `open-session`, `close-session`) it faulted in.
    pub point: String,
    /// What went wrong, one line.
    pub message: String,
}

/// A node rejected by a plugin's predicate.
#[derive(Clone, Debug, PartialEq)]
/// Shared strings: one answer's reasons are reused for every node they cover.
pub struct Reject {
    /// The plugin that rejected the node (`tephra` for the host's own).
    pub plugin: Arc<str>,
    /// Why, one line.
    pub message: Arc<str>,
    /// No eviction would make the node fit (preemption skips it).
    pub unresolvable: bool,
}

/// One configured plugin.
pub struct Slot {
    /// Its entry in the config (name, switches, arguments).
    pub conf: PluginConf,
    /// What answers for it (a Wasm instance, or a native build in benchmarks).
    pub backend: Box<dyn Backend>,
    /// The plugin's name, shared by its rejections.
    name: Arc<str>,
    points: Vec<P>,
    delivered: usize,
    down: bool,
    calls: u64,
    busy: std::time::Duration,
    /// The session whose final state the backend keeps: it received every
    /// event of it and closed it without fault.
    holds: Option<u64>,
    /// Sessions opened from a delta.
    updates: u64,
    /// How long its last open took: the opening queue takes the slowest first.
    last_open: std::time::Duration,
    /// Time spent in it this session (open, events, calls), against the budget.
    spent: std::time::Duration,
    /// Whether it went over its budget this session.
    over: bool,
    /// Sessions in a row it went over its budget.
    stalls: u32,
    /// Sessions it still sits out, quarantined after repeated stalls.
    quarantined: u32,
}

impl Slot {
    /// A configured plugin answered by `backend`.
    pub fn new(conf: PluginConf, backend: Box<dyn Backend>) -> Self {
        let points = backend.info().points.to_vec();
        let name = conf.name.as_str().into();
        let busy = Default::default();
        let last_open = Default::default();
        Slot {
            conf,
            backend,
            name,
            points,
            delivered: 0,
            down: false,
            calls: 0,
            busy,
            holds: None,
            updates: 0,
            last_open,
            spent: Default::default(),
            over: false,
            stalls: 0,
            quarantined: 0,
        }
    }

    /// Whether this plugin takes part in `point`: it implements it and its
    /// switch is on.
    fn implements(&self, point: P, unset_is_on: bool) -> bool {
        self.points.contains(&point) && switch_for(point).is_none_or(|s| self.conf.switch(s, unset_is_on))
    }

    /// Whether this plugin is asked about `point`: it takes part and has not
    /// faulted this session.
    fn answers(&self, point: P, unset_is_on: bool) -> bool {
        !self.down && self.implements(point, unset_is_on)
    }

    /// Whether this plugin, once down, refuses at its gates.
    fn closed(&self) -> bool {
        !self.conf.fault_skip
    }
}

/// One plugin's part in a call.
enum Reply {
    Answer(Answer),
    /// The plugin is down and fails closed: the caller applies the point's
    /// refusal (the docs/operations.md table).
    Closed,
}

/// The configured tiers of plugins.
pub struct Policies {
    /// The plugins, tier by tier, in config order.
    pub tiers: Vec<Vec<Slot>>,
    /// Config-file semantics: unset switches are on.
    pub unset_is_on: bool,
    /// The faults of this session so far.
    pub faults: Vec<Fault>,
    /// How long the plugins' part of the last session open took.
    pub opened_in: std::time::Duration,
    /// The session's host-side task facts: a task whose pod has rules
    /// tephra does not evaluate is rejected by every node, before any plugin.
    pub extra: Option<Arc<Extra>>,
    /// Time one plugin may spend per session (open, events, calls); past
    /// it, it faults and sits the session out.
    pub cycle_budget: std::time::Duration,
    /// While [`Policies::refusal`] asks: the reason the plugin asked last gave.
    whys: bool,
    last_why: Option<String>,
}

/// The default [`Policies::cycle_budget`].
pub const CYCLE_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);
/// Sessions in a row over budget before a plugin is quarantined, and how
/// many sessions it then sits out before it is tried again.
pub const STALLS_MAX: u32 = 3;
/// See [`STALLS_MAX`].
pub const QUARANTINE_SESSIONS: u32 = 10;

/// Plugins with their place in the tiers.
type Placed<'a> = Vec<(usize, &'a mut Slot)>;

/// The opening queue: `pop` takes the slowest plugin by its last open, and
/// among equals (a first open) the first in the tiers.
fn opening_queue(mut slots: Placed<'_>) -> Placed<'_> {
    slots.sort_by_key(|(i, s)| (s.last_open, std::cmp::Reverse(*i)));
    slots
}

pub use tephra_contract::point_name;

/// Why a down plugin refused.
pub const CLOSED: &str = "plugin is down after a fault and its fault policy is fail-closed";

impl Policies {
    /// The tiers of plugins; `unset_is_on`: a switch the config leaves unset is on.
    pub fn new(tiers: Vec<Vec<Slot>>, unset_is_on: bool) -> Self {
        Policies {
            tiers,
            unset_is_on,
            faults: Vec::new(),
            opened_in: Default::default(),
            extra: None,
            cycle_budget: CYCLE_BUDGET,
            whys: false,
            last_why: None,
        }
    }

    fn enabled(&self, slot: &Slot, point: P) -> bool {
        slot.answers(point, self.unset_is_on)
    }

    /// Per plugin, how many sessions it opened from a delta.
    pub fn update_counts(&self) -> Vec<(String, u64)> {
        self.tiers.iter().flatten().map(|s| (s.conf.name.clone(), s.updates)).collect()
    }

    /// A plugin that is down and shuts `point`'s gate, for the reason a
    /// refusal gives.
    pub fn closed_at(&self, point: P) -> Option<&str> {
        let shut = |s: &&Slot| s.down && s.closed() && s.implements(point, self.unset_is_on);
        self.tiers.iter().flatten().find(shut).map(|s| s.conf.name.as_str())
    }

    /// Whether any plugin answers `point`.
    pub fn any(&self, point: P) -> bool {
        self.tiers.iter().flatten().any(|s| self.enabled(s, point))
    }

    fn fail(faults: &mut Vec<Fault>, slot: &mut Slot, point: P, message: String) {
        let message = one_line(&message, MESSAGE_BYTES).into_owned();
        tracing::warn!(plugin = %slot.conf.name, point = point_name(point), "plugin fault: {message}");
        faults.push(Fault { plugin: slot.conf.name.clone(), point: point_name(point).into(), message });
        slot.down = true;
    }

    fn fail_session(faults: &mut Vec<Fault>, slot: &mut Slot, what: &str, message: String) {
        let message = one_line(&message, MESSAGE_BYTES).into_owned();
        tracing::warn!(plugin = %slot.conf.name, "plugin fault in {what}: {message}");
        faults.push(Fault { plugin: slot.conf.name.clone(), point: what.into(), message });
        slot.down = true;
    }

    /// Opens a session in every plugin, on two threads (each plugin copies
    /// the snapshot or the delta into its own memory, so this is most of a
    /// session's opening time); a plugin that fails to open sits the session
    /// out.
    pub fn open(&mut self, snap: &Snapshot, names: &Arc<Names>) {
        self.open_from(snap, names, None)
    }

    /// [`Policies::open`]; a plugin that keeps session `base` (see
    /// [`Policies::close_as`]) gets only `delta`, the others the snapshot.
    pub fn open_from(&mut self, snap: &Snapshot, names: &Arc<Names>, delta: Option<(u64, &SnapshotDelta)>) {
        self.faults.clear();
        let started = std::time::Instant::now();
        // Two threads take plugins from one queue, the slowest first, each
        // the next as it finishes. (Split in halves by count, proportion and
        // nodegroup opened on one thread after a big cycle: 20 ms of work
        // against 13 on the other.)
        let queue = std::sync::Mutex::new(opening_queue(self.tiers.iter_mut().flatten().enumerate().collect()));
        let next = || queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let open_one = |slot: &mut Slot| {
            let args = slot.conf.plugin_arguments();
            let r = match delta {
                Some((base, d)) if slot.holds == Some(base) => slot.backend.update_session(d, names, &args),
                _ => Ok(false),
            };
            slot.holds = None;
            slot.updates += u64::from(r == Ok(true));
            match r {
                Ok(false) => slot.backend.open_session(snap, names, &args),
                other => other.map(|_| ()),
            }
        };
        // Faults are tagged with the plugin's place in the tiers, to report
        // them in that order whichever thread met them.
        let budget = self.cycle_budget;
        let open_all = || {
            let mut faults = Vec::new();
            while let Some((i, slot)) = next() {
                slot.delivered = 0;
                slot.down = false;
                if let Some(why) = Self::quarantine(slot, budget) {
                    let mut f = Vec::new();
                    Self::fail_session(&mut f, slot, "open-session", why);
                    faults.extend(f.into_iter().map(|f| (i, f)));
                    continue;
                }
                let started = std::time::Instant::now();
                // A panic (not a fault value: unreachable in practice) fails
                // only the plugin it hit.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| open_one(slot)))
                    .unwrap_or_else(|_| Err("the host panicked while opening it".into()));
                slot.last_open = started.elapsed();
                slot.busy += slot.last_open;
                slot.spent = slot.last_open;
                let r = r.and_then(|()| Self::within_budget(slot, budget));
                if let Err(e) = r {
                    let mut f = Vec::new();
                    Self::fail_session(&mut f, slot, "open-session", format!("open-session failed: {e}"));
                    faults.extend(f.into_iter().map(|f| (i, f)));
                }
            }
            faults
        };
        let (mut faults, theirs) = std::thread::scope(|scope| {
            let other = scope.spawn(open_all);
            (open_all(), other.join())
        });
        // The other thread cannot panic outside `catch_unwind`.
        faults.extend(theirs.unwrap_or_default());
        faults.sort_by_key(|(i, _)| *i);
        self.faults.extend(faults.into_iter().map(|(_, f)| f));
        self.opened_in = started.elapsed();
    }

    /// Closes the session in every plugin; one that faulted in it starts the
    /// next session afresh (its backend discards what it kept).
    pub fn close(&mut self, events: &[Event]) {
        self.close_as(events, None)
    }

    /// [`Policies::close`] of session `id`: every plugin receives the events
    /// it has not seen, so that it ends in the session's final state and the
    /// next session can start from it.
    pub fn close_as(&mut self, events: &[Event], id: Option<u64>) {
        for slot in self.tiers.iter_mut().flatten() {
            let wants = slot.points.contains(&P::Events) || id.is_some();
            if !slot.down && wants && slot.delivered < events.len() {
                let r = slot.backend.on_events(&events[slot.delivered..]);
                slot.delivered = events.len();
                if let Err(e) = r {
                    Self::fail(&mut self.faults, slot, P::Events, e);
                }
            }
            let was_down = slot.down;
            if let Err(e) = slot.backend.close_session() {
                if !was_down {
                    Self::fail_session(&mut self.faults, slot, "close-session", e);
                }
            }
            if slot.down {
                slot.backend.discard();
            }
            slot.holds = id.filter(|_| !slot.down && slot.delivered == events.len());
        }
    }

    /// Whether the slot sits this session out in quarantine (why, if so),
    /// after [`STALLS_MAX`] sessions in a row over its budget; the count of
    /// the last session is taken here.
    fn quarantine(slot: &mut Slot, budget: std::time::Duration) -> Option<String> {
        slot.stalls = if std::mem::take(&mut slot.over) { slot.stalls + 1 } else { 0 };
        slot.spent = Default::default();
        if slot.stalls >= STALLS_MAX {
            slot.stalls = 0;
            slot.quarantined = QUARANTINE_SESSIONS;
        }
        if slot.quarantined == 0 {
            return None;
        }
        slot.quarantined -= 1;
        Some(format!(
            "quarantined: over its budget of {budget:?} per cycle in {STALLS_MAX} cycles in a row; it sits out {} more \
             session(s) before it is tried again",
            slot.quarantined
        ))
    }

    /// An error once the slot has spent more than `budget` this session.
    fn within_budget(slot: &mut Slot, budget: std::time::Duration) -> Result<(), String> {
        if slot.spent <= budget {
            return Ok(());
        }
        slot.over = true;
        Err(format!("spent {:?} this cycle, over its budget of {budget:?}", slot.spent))
    }

    /// Calls one plugin after delivering the events it has not seen.
    fn ask(
        faults: &mut Vec<Fault>,
        slot: &mut Slot,
        events: &[Event],
        call: Call<'_>,
        budget: std::time::Duration,
    ) -> Option<Answer> {
        // Busy time includes delivering events: both are the plugin's work.
        let started = std::time::Instant::now();
        let r = if slot.delivered < events.len() {
            let r = slot.backend.on_events(&events[slot.delivered..]);
            slot.delivered = events.len();
            r.map_err(|e| (P::Events, e))
        } else {
            Ok(())
        };
        let r = r.and_then(|()| {
            slot.calls += 1;
            slot.backend.call(call).map_err(|e| (call.point(), e))
        });
        let took = started.elapsed();
        slot.busy += took;
        slot.spent += took;
        // Over budget, even a good answer is not used: the plugin is out.
        let r = r.and_then(|a| Self::within_budget(slot, budget).map(|()| a).map_err(|e| (call.point(), e)));
        match r {
            Ok(a) => Some(a),
            Err((point, e)) => {
                Self::fail(faults, slot, point, e);
                None
            }
        }
    }

    /// Every enabled plugin's reply, in tier order, with the tier index; `f`
    /// returns whether to go on. A plugin that is down, or faults now (a
    /// trap, or an answer `f` finds out of contract), replies
    /// [`Reply::Closed`] unless its fault policy is `skip`.
    fn each(
        &mut self,
        events: &[Event],
        call: Call<'_>,
        mut f: impl FnMut(usize, &str, Reply) -> Result<bool, String>,
    ) {
        let point = call.point();
        let (unset_is_on, budget) = (self.unset_is_on, self.cycle_budget);
        for (ti, tier) in self.tiers.iter_mut().enumerate() {
            for slot in tier.iter_mut() {
                if !slot.implements(point, unset_is_on) {
                    continue;
                }
                let answer = if slot.down { None } else { Self::ask(&mut self.faults, slot, events, call, budget) };
                if self.whys {
                    self.last_why = slot.backend.why();
                }
                let go_on = match answer {
                    Some(a) => match f(ti, &slot.conf.name, Reply::Answer(a)) {
                        Err(e) => {
                            Self::fail(&mut self.faults, slot, point, e);
                            None
                        }
                        Ok(go_on) => Some(go_on),
                    },
                    None => None,
                };
                let go_on = match go_on {
                    Some(g) => g,
                    None if slot.closed() => f(ti, &slot.conf.name, Reply::Closed).unwrap_or(false),
                    None => true,
                };
                if !go_on {
                    return;
                }
            }
        }
    }

    /// Sort keys of every plugin for `ids` (one row per plugin, tier order).
    pub fn order_keys(&mut self, events: &[Event], call: Call<'_>, n: usize) -> Vec<Vec<f64>> {
        let mut rows = Vec::new();
        // Orders are no gate: a down plugin's keys are left out.
        self.each(events, call, |_, _, a| match a {
            Reply::Answer(Answer::Keys(k)) if k.len() == n && k.iter().all(|x| !x.is_nan()) => {
                rows.push(k);
                Ok(true)
            }
            Reply::Answer(Answer::Keys(k)) => Err(format!("returned {} keys for {n} ids, or a NaN key", k.len())),
            Reply::Answer(other) => Err(format!("unexpected answer {other:?}")),
            Reply::Closed => Ok(true),
        });
        rows
    }

    /// Predicates over `nodes`, ANDed: for each node the first rejection.
    pub fn predicate(&mut self, events: &[Event], task: u32, nodes: &[u32]) -> Vec<Option<Reject>> {
        if let Some(why) = self.extra.as_ref().and_then(|e| e.task_unevaluated.get(task as usize)?.clone()) {
            let reject = Reject { plugin: "tephra".into(), message: why, unresolvable: true };
            return vec![Some(reject); nodes.len()];
        }
        let mut out: Vec<Option<Reject>> = vec![None; nodes.len()];
        let point = P::Predicate;
        let unset_is_on = self.unset_is_on;
        for slot in self.tiers.iter_mut().flatten() {
            let down_closed = slot.down && slot.closed() && slot.implements(point, unset_is_on);
            // Most slots implement no predicate: they cost nothing here.
            if !down_closed && !slot.answers(point, unset_is_on) {
                continue;
            }
            // Only nodes still standing are asked about.
            let idx: Vec<usize> = (0..nodes.len()).filter(|&i| out[i].is_none()).collect();
            if idx.is_empty() {
                break;
            }
            let closed = |slot: &Slot, out: &mut Vec<Option<Reject>>| {
                let message: Arc<str> = CLOSED.into();
                for &i in &idx {
                    out[i] = Some(Reject { plugin: slot.name.clone(), message: message.clone(), unresolvable: true });
                }
            };
            if down_closed {
                closed(slot, &mut out);
                continue;
            }
            let ask: Vec<u32> = idx.iter().map(|&i| nodes[i]).collect();
            let Some(a) = Self::ask(&mut self.faults, slot, events, Call::Predicate(task, &ask), self.cycle_budget)
            else {
                if slot.closed() {
                    closed(slot, &mut out);
                }
                continue;
            };
            let fit = match a {
                Answer::Verdict(v) if ask.len() == 1 => {
                    if let Some((message, unresolvable)) = v {
                        out[idx[0]] = Some(Reject { plugin: slot.name.clone(), message, unresolvable });
                    }
                    continue;
                }
                Answer::Fit(f)
                    if f.codes.len() == ask.len() && f.codes.iter().all(|&c| (c as usize) <= f.reasons.len()) =>
                {
                    f
                }
                other => {
                    let msg = format!("predicate answer out of contract: {other:?}");
                    Self::fail(&mut self.faults, slot, point, msg);
                    if slot.closed() {
                        closed(slot, &mut out);
                    }
                    continue;
                }
            };
            let messages: Vec<Arc<str>> =
                fit.reasons.iter().map(|r| one_line(&r.message, MESSAGE_BYTES).into()).collect();
            for (k, &code) in fit.codes.iter().enumerate() {
                if code > 0 {
                    let c = code as usize - 1;
                    out[idx[k]] = Some(Reject {
                        plugin: slot.name.clone(),
                        message: messages[c].clone(),
                        unresolvable: fit.reasons[c].unresolvable,
                    });
                }
            }
        }
        out
    }

    /// Node scores summed over all plugins.
    pub fn node_scores(&mut self, events: &[Event], task: u32, nodes: &[u32]) -> Vec<f64> {
        let mut total = vec![0.0; nodes.len()];
        let n = nodes.len();
        self.each(events, Call::NodeOrder(task, nodes), |_, _, a| match a {
            Reply::Answer(Answer::Keys(k)) if k.len() == n && k.iter().all(|x| x.is_finite()) => {
                total.iter_mut().zip(k).for_each(|(t, s)| *t += s);
                Ok(true)
            }
            Reply::Answer(other) => {
                Err(format!("node-order answer out of contract (length or non-finite score): {other:?}"))
            }
            // Scores are no gate: the predicates already kept the nodes.
            Reply::Closed => Ok(true),
        });
        total
    }

    /// HyperNode scores for a job's (or subgroup's) domain, summed over all
    /// plugins.
    pub fn hypernode_scores(&mut self, events: &[Event], job: u32, group: u32, hypernodes: &[u32]) -> Vec<f64> {
        let mut total = vec![0.0; hypernodes.len()];
        let n = hypernodes.len();
        self.each(events, Call::HypernodeOrder(job, group, hypernodes), |_, _, a| match a {
            Reply::Answer(Answer::Keys(k)) if k.len() == n && k.iter().all(|x| x.is_finite()) => {
                total.iter_mut().zip(k).for_each(|(t, s)| *t += s);
                Ok(true)
            }
            Reply::Answer(other) => {
                Err(format!("hypernode-order answer out of contract (length or non-finite score): {other:?}"))
            }
            // The host's gradients already keep hard constraints.
            Reply::Closed => Ok(true),
        });
        total
    }

    /// OR over all plugins (no plugin ⇒ false): overused. Closed ⇒ overused.
    pub fn any_true(&mut self, events: &[Event], call: Call<'_>) -> bool {
        let mut r = false;
        self.each(events, call, |_, _, a| match a {
            Reply::Answer(Answer::Bool(b)) => {
                r |= b;
                Ok(!r)
            }
            Reply::Answer(other) => Err(format!("unexpected answer {other:?}")),
            Reply::Closed => {
                r = true;
                Ok(false)
            }
        });
        r
    }

    /// AND over all plugins (no plugin ⇒ true): allocatable, preemptive,
    /// job-ready. Closed ⇒ false.
    pub fn all_true(&mut self, events: &[Event], call: Call<'_>) -> bool {
        let mut r = true;
        self.each(events, call, |_, _, a| match a {
            Reply::Answer(Answer::Bool(b)) => {
                r &= b;
                Ok(r)
            }
            Reply::Answer(other) => Err(format!("unexpected answer {other:?}")),
            Reply::Closed => {
                r = false;
                Ok(false)
            }
        });
        r
    }

    /// Tier voting (pipelined, enqueueable): a Reject decides at once, a Permit
    /// decides at the end of its tier, no decision ⇒ true. Closed ⇒ Reject.
    pub fn vote(&mut self, events: &[Event], call: Call<'_>) -> bool {
        self.rejected_by(events, call).is_none()
    }

    /// The tier vote, naming the plugin that rejected (None: admitted).
    pub fn rejected_by(&mut self, events: &[Event], call: Call<'_>) -> Option<String> {
        self.refusal(events, call).map(|(plugin, _)| plugin)
    }

    /// The plugin that rejected `call` under the tier vote, with the reason
    /// it gave (`None` when it gave none, or was closed).
    pub fn refusal(&mut self, events: &[Event], call: Call<'_>) -> Option<(String, Option<String>)> {
        let mut permit_tier: Option<usize> = None;
        let mut rejected = None;
        self.whys = true;
        self.each(events, call, |ti, name, a| {
            if permit_tier.is_some_and(|t| ti > t) {
                return Ok(false);
            }
            match a {
                Reply::Answer(Answer::Vote(Vote::Reject)) => {
                    rejected = Some((name.to_string(), true));
                    Ok(false)
                }
                Reply::Closed => {
                    rejected = Some((name.to_string(), false));
                    Ok(false)
                }
                Reply::Answer(Answer::Vote(Vote::Permit)) => {
                    permit_tier.get_or_insert(ti);
                    Ok(true)
                }
                Reply::Answer(Answer::Vote(Vote::Abstain)) => Ok(true),
                Reply::Answer(other) => Err(format!("unexpected answer {other:?}")),
            }
        });
        self.whys = false;
        let why = self.last_why.take();
        rejected.map(|(plugin, answered)| (plugin, why.filter(|_| answered)))
    }

    /// The first plugin that finds the job invalid, with its reason. Closed
    /// ⇒ invalid.
    pub fn job_valid(&mut self, events: &[Event], job: u32) -> Option<(String, String)> {
        let mut r = None;
        self.each(events, Call::JobValid(job), |_, name, a| match a {
            Reply::Answer(Answer::Invalid(Some(reason))) => {
                r = Some((name.to_string(), one_line(&reason, MESSAGE_BYTES).into_owned()));
                Ok(false)
            }
            Reply::Closed => {
                r = Some((name.to_string(), CLOSED.to_string()));
                Ok(false)
            }
            Reply::Answer(Answer::Invalid(None)) => Ok(true),
            Reply::Answer(other) => Err(format!("unexpected answer {other:?}")),
        });
        r
    }

    /// Notifies every plugin that a job was admitted.
    pub fn job_enqueued(&mut self, events: &[Event], job: u32) {
        self.each(events, Call::JobEnqueued(job), |_, _, _| Ok(true));
    }

    /// The first tier with any plugin decides (AND within it); none ⇒ false.
    /// Closed ⇒ not starving (nothing is evicted for the job).
    pub fn job_starving(&mut self, events: &[Event], job: u32) -> bool {
        let mut tier = None;
        let mut r = true;
        self.each(events, Call::JobStarving(job), |ti, _, a| {
            if tier.is_some_and(|t| t != ti) {
                return Ok(false);
            }
            tier = Some(ti);
            match a {
                Reply::Answer(Answer::Bool(b)) => {
                    r &= b;
                    Ok(true)
                }
                Reply::Answer(other) => Err(format!("unexpected answer {other:?}")),
                Reply::Closed => {
                    r = false;
                    Ok(false)
                }
            }
        });
        tier.is_some() && r
    }

    /// Victim selection with Volcano's tier quirks (reference §5.1): an
    /// empty answer makes its tier abstain, an empty intersection resets, the
    /// first tier with victims decides. Returns the victims and the plugins
    /// whose votes selected them. Closed ⇒ no victims.
    pub fn victims(&mut self, events: &[Event], call: Call<'_>, candidates: &[u32]) -> Option<(Vec<u32>, Vec<String>)> {
        let allowed: HashSet<u32> = candidates.iter().copied().collect();
        let mut victims: Option<(Vec<u32>, Vec<String>)> = None;
        let mut skip_tier = None;
        let mut current = None;
        let mut closed = false;
        self.each(events, call, |ti, name, a| {
            if current != Some(ti) {
                if victims.is_some() {
                    return Ok(false);
                }
                current = Some(ti);
            }
            let a = match a {
                Reply::Answer(a) => a,
                Reply::Closed => {
                    closed = true;
                    return Ok(false);
                }
            };
            if skip_tier == Some(ti) {
                return Ok(true);
            }
            let v = match a {
                Answer::Victims(v) => v,
                other => return Err(format!("unexpected answer {other:?}")),
            };
            if let Some(bad) = v.tasks.iter().find(|t| !allowed.contains(t)) {
                return Err(format!("named victim {bad}, which is not a candidate"));
            }
            if v.vote == Vote::Abstain {
                return Ok(true);
            }
            if v.tasks.is_empty() {
                victims = None;
                skip_tier = Some(ti);
                return Ok(true);
            }
            victims = match victims.take() {
                None => Some((v.tasks, vec![name.to_string()])),
                Some((prev, mut voters)) => {
                    let keep: HashSet<u32> = v.tasks.into_iter().collect();
                    let both: Vec<u32> = prev.into_iter().filter(|t| keep.contains(t)).collect();
                    voters.push(name.to_string());
                    (!both.is_empty()).then_some((both, voters))
                }
            };
            Ok(true)
        });
        victims.filter(|_| !closed)
    }

    /// Per tier the union of victim-task answers; the first non-empty tier
    /// decides. Closed ⇒ none.
    pub fn victim_tasks(&mut self, events: &[Event], candidates: &[u32]) -> Vec<u32> {
        let allowed: HashSet<u32> = candidates.iter().copied().collect();
        let mut by_tier: Vec<(usize, Vec<u32>)> = Vec::new();
        let mut closed = false;
        self.each(events, Call::VictimTasks(candidates), |ti, _, a| match a {
            Reply::Closed => {
                closed = true;
                Ok(false)
            }
            Reply::Answer(Answer::Ids(ids)) if ids.iter().all(|t| allowed.contains(t)) => {
                match by_tier.last_mut() {
                    Some((t, v)) if *t == ti => v.extend(ids),
                    _ => by_tier.push((ti, ids)),
                }
                Ok(true)
            }
            Reply::Answer(other) => Err(format!("victim-tasks answer out of contract (a non-candidate?): {other:?}")),
        });
        if closed {
            return Vec::new();
        }
        let mut out = by_tier.into_iter().map(|(_, v)| v).find(|v| !v.is_empty()).unwrap_or_default();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The first plugin (tier order) that names a job among `jobs`. Closed
    /// ⇒ none.
    pub fn target_job(&mut self, events: &[Event], jobs: &[u32]) -> Option<u32> {
        let mut r = None;
        self.each(events, Call::TargetJob(jobs), |_, _, a| match a {
            Reply::Answer(Answer::Id(None)) => Ok(true),
            Reply::Answer(Answer::Id(Some(j))) if jobs.contains(&j) => {
                r = Some(j);
                Ok(false)
            }
            Reply::Closed => {
                r = None;
                Ok(false)
            }
            Reply::Answer(other) => Err(format!("target-job answer out of contract (not a candidate?): {other:?}")),
        });
        r
    }

    /// The first plugin's reserved nodes for `owner`, all among `candidates`
    /// (`None`: no plugin answers; `Some(Err)`: a refusal with its reason,
    /// prefixed with the plugin's name; closed ⇒ a refusal).
    pub fn reserved_nodes(
        &mut self,
        events: &[Event],
        owner: LockOwner,
        candidates: &[u32],
    ) -> Option<Result<Vec<u32>, String>> {
        let allowed: HashSet<u32> = candidates.iter().copied().collect();
        let mut r = None;
        self.each(events, Call::ReservedNodes(owner, candidates), |_, name, a| match a {
            Reply::Closed => {
                r = Some(Err(format!("{name}: {CLOSED}")));
                Ok(false)
            }
            Reply::Answer(Answer::Reserved(Ok(nodes))) if nodes.iter().all(|n| allowed.contains(n)) => {
                let mut nodes = nodes;
                nodes.sort_unstable();
                nodes.dedup();
                r = Some(Ok(nodes));
                Ok(false)
            }
            Reply::Answer(Answer::Reserved(Err(reason))) => {
                r = Some(Err(format!("{name}: {}", one_line(&reason, MESSAGE_BYTES))));
                Ok(false)
            }
            Reply::Answer(other) => {
                Err(format!("reserved-nodes answer out of contract (a non-candidate node?): {other:?}"))
            }
        });
        r
    }

    /// The first plugin's queue status (deserved rows, shares) for `queues`.
    pub fn queue_status(
        &mut self,
        events: &[Event],
        queues: &[u32],
        dims: usize,
    ) -> Option<(String, Vec<f64>, Vec<f64>)> {
        let mut r = None;
        let n = queues.len();
        self.each(events, Call::QueueStatus(queues), |_, name, a| match a {
            Reply::Answer(Answer::QueueStatus(st)) if st.deserved.len() == n * dims && st.share.len() == n => {
                r = Some((name.to_string(), st.deserved, st.share));
                Ok(false)
            }
            Reply::Answer(other) => Err(format!("queue-status answer out of contract: {other:?}")),
            // A report, no gate: the next plugin may answer.
            Reply::Closed => Ok(true),
        });
        r
    }

    /// Per plugin (calls, seconds) since the last take.
    pub fn take_call_stats(&mut self) -> Vec<(String, u64, f64)> {
        self.tiers
            .iter_mut()
            .flatten()
            .map(|s| {
                let r = (s.conf.name.clone(), s.calls, s.busy.as_secs_f64());
                s.calls = 0;
                s.busy = Default::default();
                r
            })
            .collect()
    }

    /// Per plugin, how long its last session took to open.
    pub fn open_times(&self) -> Vec<(String, std::time::Duration)> {
        self.tiers.iter().flatten().map(|s| (s.conf.name.clone(), s.last_open)).collect()
    }

    /// Names of plugins in tier order.
    pub fn names(&self) -> Vec<String> {
        self.tiers.iter().flatten().map(|s| s.conf.name.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_contract::{PluginInfo, Victims};

    type Script = Box<dyn FnMut(Call<'_>) -> Result<Answer, String> + Send>;

    /// A backend answering from a closure, to pin the combination rules.
    struct Scripted {
        info: PluginInfo,
        script: Script,
        discarded: Discards,
        fails_open: bool,
    }

    impl Backend for Scripted {
        fn info(&self) -> &PluginInfo {
            &self.info
        }
        fn origin(&self) -> &str {
            "test"
        }
        fn open_session(&mut self, _: &Snapshot, _: &Arc<Names>, _: &[(String, String)]) -> Result<(), String> {
            if self.fails_open {
                return Err("no".into());
            }
            Ok(())
        }
        fn close_session(&mut self) -> Result<(), String> {
            Ok(())
        }
        fn on_events(&mut self, _: &[Event]) -> Result<(), String> {
            Ok(())
        }
        fn call(&mut self, call: Call<'_>) -> Result<Answer, String> {
            (self.script)(call)
        }
        fn discard(&mut self) {
            self.discarded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    type Discards = Arc<std::sync::atomic::AtomicUsize>;

    fn slot(name: &str, points: &[P], script: impl FnMut(Call<'_>) -> Result<Answer, String> + Send + 'static) -> Slot {
        counted_slot(name, points, script).0
    }

    /// A scripted slot, and how many times it was told to discard its instance.
    fn counted_slot(
        name: &str,
        points: &[P],
        script: impl FnMut(Call<'_>) -> Result<Answer, String> + Send + 'static,
    ) -> (Slot, Discards) {
        let info = PluginInfo {
            name: name.into(),
            version: "t".into(),
            contract: tephra_contract::CONTRACT.into(),
            points: points.to_vec(),
        };
        let discarded = Discards::default();
        let backend = Scripted { info, script: Box::new(script), discarded: discarded.clone(), fails_open: false };
        (Slot::new(PluginConf::new(name), Box::new(backend)), discarded)
    }

    fn victims(tasks: &[u32], vote: Vote) -> impl FnMut(Call<'_>) -> Result<Answer, String> + Send + 'static {
        let tasks = tasks.to_vec();
        move |_| Ok(Answer::Victims(Victims { tasks: tasks.clone(), vote }))
    }

    fn vote(v: Vote) -> impl FnMut(Call<'_>) -> Result<Answer, String> + Send + 'static {
        move |_| Ok(Answer::Vote(v))
    }

    fn boolean(b: bool) -> impl FnMut(Call<'_>) -> Result<Answer, String> + Send + 'static {
        move |_| Ok(Answer::Bool(b))
    }

    const C: &[u32] = &[1, 2, 3, 4];

    #[test]
    fn victim_voting_quirks() {
        let pick =
            |tiers: Vec<Vec<Slot>>| Policies::new(tiers, true).victims(&[], Call::Preemptable(0, C), C).map(|v| v.0);
        let pre = [P::Preemptable];
        // Intersection within a tier, first tier with victims decides.
        let got = pick(vec![
            vec![
                slot("a", &pre, victims(&[1, 2, 3], Vote::Permit)),
                slot("b", &pre, victims(&[2, 3, 4], Vote::Permit)),
            ],
            vec![slot("c", &pre, victims(&[4], Vote::Permit))],
        ]);
        assert_eq!(got, Some(vec![2, 3]));
        // An empty answer makes its tier abstain: tier 2 decides.
        let got = pick(vec![
            vec![slot("a", &pre, victims(&[1], Vote::Permit)), slot("gang", &pre, victims(&[], Vote::Permit))],
            vec![slot("c", &pre, victims(&[4], Vote::Permit))],
        ]);
        assert_eq!(got, Some(vec![4]));
        // An empty intersection resets; the next plugin of the tier starts over.
        let got = pick(vec![vec![
            slot("a", &pre, victims(&[1], Vote::Permit)),
            slot("b", &pre, victims(&[2], Vote::Permit)),
            slot("c", &pre, victims(&[3, 4], Vote::Permit)),
        ]]);
        assert_eq!(got, Some(vec![3, 4]));
        // Abstain is ignored; nobody deciding means no victims.
        assert_eq!(pick(vec![vec![slot("a", &pre, victims(&[1], Vote::Abstain))]]), None);
        // A victim that was not a candidate is a fault: no victims (fail
        // closed), or, with `faultPolicy: skip`, the others decide.
        for skip in [false, true] {
            let mut bad = slot("bad", &pre, victims(&[99], Vote::Permit));
            bad.conf.fault_skip = skip;
            let mut p = Policies::new(vec![vec![bad, slot("ok", &pre, victims(&[2], Vote::Permit))]], true);
            let want = skip.then(|| (vec![2], vec!["ok".to_string()]));
            assert_eq!(p.victims(&[], Call::Preemptable(0, C), C), want);
            assert_eq!(p.faults.len(), 1);
            assert!(p.faults[0].message.contains("not a candidate"));
        }
    }

    #[test]
    fn tier_votes() {
        let run = |tiers: Vec<Vec<Slot>>| Policies::new(tiers, true).vote(&[], Call::JobPipelined(0));
        let pp = [P::JobPipelined];
        assert!(run(vec![]), "no plugin: true");
        assert!(!run(vec![vec![slot("a", &pp, vote(Vote::Permit)), slot("b", &pp, vote(Vote::Reject))]]));
        assert!(run(vec![vec![slot("a", &pp, vote(Vote::Permit))], vec![slot("b", &pp, vote(Vote::Reject))]]));
        assert!(!run(vec![vec![slot("a", &pp, vote(Vote::Abstain))], vec![slot("b", &pp, vote(Vote::Reject))]]));
        assert!(run(vec![vec![slot("a", &pp, vote(Vote::Abstain))], vec![slot("b", &pp, vote(Vote::Abstain))]]));
    }

    #[test]
    fn and_or_and_starving() {
        let o = [P::Overused];
        let mut p = Policies::new(vec![vec![slot("a", &o, boolean(false))], vec![slot("b", &o, boolean(true))]], true);
        assert!(p.any_true(&[], Call::Overused(0)));
        assert!(!Policies::new(vec![], true).any_true(&[], Call::Overused(0)));
        let a = [P::Allocatable];
        let mut p = Policies::new(vec![vec![slot("a", &a, boolean(true)), slot("b", &a, boolean(false))]], true);
        assert!(!p.all_true(&[], Call::Allocatable(0, 0)));
        assert!(Policies::new(vec![], true).all_true(&[], Call::Allocatable(0, 0)));
        // Starving: the first tier with a plugin decides, AND within it; none ⇒ false.
        let s = [P::JobStarving];
        let mut p = Policies::new(
            vec![
                vec![slot("gang", &s, boolean(true)), slot("prio", &s, boolean(false))],
                vec![slot("x", &s, boolean(true))],
            ],
            true,
        );
        assert!(!p.job_starving(&[], 0));
        let mut p = Policies::new(vec![vec![], vec![slot("x", &s, boolean(true))]], true);
        assert!(p.job_starving(&[], 0));
        assert!(!Policies::new(vec![], true).job_starving(&[], 0));
    }

    /// A plugin that traps at a gate refuses there by default (and stays
    /// down for the session); with `faultPolicy: skip` it abstains.
    #[test]
    fn faults_close_every_gate_unless_the_policy_is_skip() {
        let gates = [
            P::Predicate,
            P::Allocatable,
            P::Preemptive,
            P::JobReady,
            P::Overused,
            P::JobPipelined,
            P::JobEnqueueable,
            P::JobValid,
            P::JobStarving,
            P::Reclaimable,
            P::VictimTasks,
            P::TargetJob,
            P::ReservedNodes,
        ];
        let cands = [1, 2];
        // What the healthy plugin beside it says: yes to everything.
        let yes = |c: Call<'_>| {
            Ok(match c {
                Call::Predicate(_, nodes) => {
                    Answer::Fit(tephra_contract::Fit { codes: vec![0; nodes.len()], reasons: vec![] })
                }
                Call::Overused(_) => Answer::Bool(false),
                Call::JobPipelined(_) | Call::JobEnqueueable(_) => Answer::Vote(Vote::Permit),
                Call::JobValid(_) => Answer::Invalid(None),
                Call::Reclaimable(..) => Answer::Victims(Victims { tasks: vec![1], vote: Vote::Permit }),
                Call::VictimTasks(_) => Answer::Ids(vec![1]),
                Call::TargetJob(_) => Answer::Id(Some(0)),
                Call::ReservedNodes(..) => Answer::Reserved(Ok(vec![1])),
                _ => Answer::Bool(true),
            })
        };
        // Whether the combined answer lets the thing through.
        let open = |p: &mut Policies| -> Vec<bool> {
            vec![
                p.predicate(&[], 0, &[1, 2]).iter().all(Option::is_none),
                p.all_true(&[], Call::Allocatable(0, 0)),
                p.all_true(&[], Call::Preemptive(0, 0)),
                p.all_true(&[], Call::JobReady(0)),
                !p.any_true(&[], Call::Overused(0)),
                p.vote(&[], Call::JobPipelined(0)),
                p.vote(&[], Call::JobEnqueueable(0)),
                p.job_valid(&[], 0).is_none(),
                p.job_starving(&[], 0),
                p.victims(&[], Call::Reclaimable(0, &cands), &cands).is_some(),
                !p.victim_tasks(&[], &cands).is_empty(),
                p.target_job(&[], &[0]).is_some(),
                matches!(p.reserved_nodes(&[], LockOwner::Job(0), &cands), Some(Ok(_))),
            ]
        };
        for skip in [false, true] {
            let mut trap = slot("trap", &gates, |_| Err("wasm trap: unreachable".into()));
            trap.conf.fault_skip = skip;
            // First in its tier, so that it is asked where the first answer decides.
            let mut p = Policies::new(vec![vec![trap, slot("ok", &gates, yes)]], true);
            let got = open(&mut p);
            assert_eq!(got, vec![skip; gates.len()], "fault_skip {skip}");
            assert_eq!(p.faults.len(), 1, "asked once, down for the rest of the session");
        }
        // Healthy, the same questions all pass: the refusals above are the fault's.
        let mut p = Policies::new(vec![vec![slot("ok", &gates, yes)]], true);
        assert_eq!(open(&mut p), vec![true; gates.len()]);
        // Out-of-contract answers close the gate too.
        let mut p = Policies::new(vec![vec![slot("odd", &[P::JobReady], |_| Ok(Answer::Id(None)))]], true);
        assert!(!p.all_true(&[], Call::JobReady(0)));
        assert!(p.faults[0].message.contains("unexpected answer"), "{:?}", p.faults);
        // Orders and scores are no gate: a down plugin is left out of them.
        let mut p = Policies::new(vec![vec![slot("t", &[P::NodeOrder], |_| Err("trap".into()))]], true);
        assert_eq!(p.node_scores(&[], 0, &[1, 2]), vec![0.0, 0.0]);
    }

    /// A plugin past its time budget in a cycle faults (failing closed);
    /// after `STALLS_MAX` such cycles in a row it is quarantined, asked
    /// nothing for `QUARANTINE_SESSIONS` sessions, then tried again.
    #[test]
    fn slow_plugins_fault_then_sit_out_in_quarantine() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c2 = calls.clone();
        let slow = slot("slow", &[P::JobReady], move |_| {
            c2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(30));
            Ok(Answer::Bool(true))
        });
        let mut p = Policies::new(vec![vec![slow]], true);
        p.cycle_budget = std::time::Duration::from_millis(20);
        let snap = tephra_snapshot::empty_snapshot(vec!["cpu".into()]);
        let asked = || calls.load(std::sync::atomic::Ordering::SeqCst);
        for cycle in 0..STALLS_MAX {
            p.open(&snap, &Arc::default());
            assert!(p.faults.is_empty(), "cycle {cycle}: {:?}", p.faults);
            assert!(!p.all_true(&[], Call::JobReady(0)), "over budget, the gate stays shut");
            assert!(p.faults[0].message.contains("over its budget of 20ms"), "{:?}", p.faults);
            p.close(&[]);
        }
        assert_eq!(asked(), STALLS_MAX as usize);
        for left in (0..QUARANTINE_SESSIONS).rev() {
            p.open(&snap, &Arc::default());
            assert!(p.faults[0].message.starts_with("quarantined"), "{:?}", p.faults);
            assert!(p.faults[0].message.contains(&format!("sits out {left} more")), "{:?}", p.faults);
            assert!(!p.all_true(&[], Call::JobReady(0)));
            p.close(&[]);
        }
        assert_eq!(asked(), STALLS_MAX as usize, "a quarantined plugin is asked nothing");
        // Back after its quarantine, and within budget it answers again.
        p.cycle_budget = std::time::Duration::from_secs(10);
        p.open(&snap, &Arc::default());
        assert!(p.faults.is_empty(), "{:?}", p.faults);
        assert!(p.all_true(&[], Call::JobReady(0)));
    }

    #[test]
    fn switches_gate_points() {
        let o = [P::Overused];
        let mut s = slot("a", &o, boolean(true));
        s.conf.switches.insert("enabledOverused".into(), false);
        assert!(!Policies::new(vec![vec![s]], true).any_true(&[], Call::Overused(0)));
        // Programmatic tiers: an unset switch is off.
        assert!(!Policies::new(vec![vec![slot("a", &o, boolean(true))]], false).any_true(&[], Call::Overused(0)));
        // A point the plugin does not declare is never asked.
        let called = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let c2 = called.clone();
        let s = slot("a", &[P::JobOrder], move |_| {
            c2.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(Answer::Bool(true))
        });
        assert!(!Policies::new(vec![vec![s]], true).any_true(&[], Call::Overused(0)));
        assert!(!called.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn out_of_contract_answers_are_faults() {
        let k = [P::JobOrder];
        let mut p = Policies::new(
            vec![vec![
                slot("short", &k, |_| Ok(Answer::Keys(vec![1.0]))),
                slot("nan", &k, |_| Ok(Answer::Keys(vec![f64::NAN, 0.0]))),
                slot("trap", &k, |_| Err("wasm trap: unreachable".into())),
                slot("good", &k, |_| Ok(Answer::Keys(vec![2.0, 1.0]))),
            ]],
            true,
        );
        let rows = p.order_keys(&[], Call::JobOrder(&[0, 1]), 2);
        assert_eq!(rows, vec![vec![2.0, 1.0]]);
        let faulty: Vec<&str> = p.faults.iter().map(|f| f.plugin.as_str()).collect();
        assert_eq!(faulty, ["short", "nan", "trap"]);
        // A faulted plugin sits out the rest of the session.
        let rows = p.order_keys(&[], Call::JobOrder(&[0, 1]), 2);
        assert_eq!(rows.len(), 1);
        assert_eq!(p.faults.len(), 3);
    }

    /// Every plugin that faulted, whatever the fault, is told to discard its
    /// instance at close; a healthy one keeps it.
    #[test]
    fn faulted_plugins_start_the_next_session_afresh() {
        let k = [P::JobOrder];
        let (nan, nan_count) = counted_slot("nan", &k, |_| Ok(Answer::Keys(vec![f64::NAN, 0.0])));
        let (trap, trap_count) = counted_slot("trap", &k, |_| Err("wasm trap: unreachable".into()));
        let (good, good_count) = counted_slot("good", &k, |_| Ok(Answer::Keys(vec![2.0, 1.0])));
        let mut p = Policies::new(vec![vec![nan, trap, good]], true);
        p.order_keys(&[], Call::JobOrder(&[0, 1]), 2);
        p.close(&[]);
        let n = |c: &Discards| c.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!((n(&nan_count), n(&trap_count), n(&good_count)), (1, 1, 0));
    }

    /// The opening queue hands out the slowest plugin first by its last
    /// open; a first open goes in tier order.
    #[test]
    fn the_slowest_plugins_open_first() {
        let mut slots: Vec<Slot> = (0..5).map(|i| slot(&format!("p{i}"), &[], |_| Ok(Answer::Unit))).collect();
        let order = |slots: &mut Vec<Slot>| {
            let mut q = opening_queue(slots.iter_mut().enumerate().collect());
            std::iter::from_fn(|| q.pop().map(|(i, _)| i)).collect::<Vec<_>>()
        };
        assert_eq!(order(&mut slots), [0, 1, 2, 3, 4]);
        for (slot, ms) in slots.iter_mut().zip([3, 9, 1, 9, 4]) {
            slot.last_open = std::time::Duration::from_millis(ms);
        }
        assert_eq!(order(&mut slots), [1, 3, 4, 0, 2]);
    }

    /// Faults met on either opening thread are reported in tier order.
    #[test]
    fn open_faults_come_in_tier_order() {
        let mut slots: Vec<Slot> = (0..4).map(|i| slot(&format!("p{i}"), &[], |_| Ok(Answer::Unit))).collect();
        // p3 and p0 fail, and are taken first (the slowest): out of tier order.
        for (i, slot) in slots.iter_mut().enumerate() {
            slot.last_open = std::time::Duration::from_millis([5, 1, 2, 9][i]);
            if i == 0 || i == 3 {
                let name = slot.conf.name.clone();
                let info = PluginInfo {
                    name,
                    version: "t".into(),
                    contract: tephra_contract::CONTRACT.into(),
                    points: vec![],
                };
                let script: Script = Box::new(|_| Ok(Answer::Unit));
                slot.backend = Box::new(Scripted { info, script, discarded: Discards::default(), fails_open: true });
            }
        }
        let mut p = Policies::new(vec![slots], true);
        p.open(&tephra_snapshot::empty_snapshot(vec!["cpu".into()]), &Arc::default());
        let who: Vec<&str> = p.faults.iter().map(|f| f.plugin.as_str()).collect();
        assert_eq!(who, ["p0", "p3"]);
    }
}
