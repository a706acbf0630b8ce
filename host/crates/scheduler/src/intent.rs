//! One record of what runs and why. Every control path — a component given
//! at start (`--plugin`, `--shadow`, the plugins directory), a changed file
//! in the watched directory, a Plugin object, an admin promote, rollback or
//! roll-forward, the scheduler's own rollback of a faulting version — acts
//! through the [`Scheduler`](crate::Scheduler), which records the act here;
//! every observer (`/plugins`, the metrics, a Plugin object's status, the
//! logs) reads it from here.
//!
//! Precedence is time: the latest act wins. A source's declaration (a file
//! and its content, a Plugin object at a generation) acts once, when it
//! appears or changes. An admin decision outlives restarts and failovers
//! (the Kubernetes driver keeps it in the API server) for as long as the
//! declarations it overrode stay as they were; the first newer declaration
//! replaces it. Where a declaration and what runs disagree, that is drift,
//! shown with both sides, never a failure.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Who acted on a plugin's versions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Actor {
    /// A person through the admin surface (the name it authenticated as).
    Admin(String),
    /// A declaration: a file, a flag, a Plugin object (see [`Declared`]).
    Source(String),
    /// The scheduler itself: a promoted version that kept faulting.
    Faults,
}

impl Actor {
    /// Who, for a person (`admin alice`).
    pub fn describe(&self) -> String {
        match self {
            Actor::Admin(who) => format!("admin {who}"),
            Actor::Source(s) => s.clone(),
            Actor::Faults => "the scheduler (faults after promotion)".into(),
        }
    }
}

/// One act on a plugin's versions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Act {
    /// The plugin acted on.
    pub plugin: String,
    /// `live`, `shadow`, `promote`, `rollback`, `forward` or `drop-shadow`.
    pub verb: String,
    /// The version (content hash) made live, or the shadow's.
    pub version: String,
    /// The live version it replaced, if any.
    pub replaced: Option<String>,
    /// Who acted.
    pub by: Actor,
    /// Wall-clock milliseconds since the epoch.
    pub at_ms: i64,
    /// The declarations ([`Declared::key`]) standing when it was made: an
    /// admin decision holds while these do.
    pub over: Vec<String>,
}

impl Act {
    /// `rollback by admin alice at 2026-11-28T20:00:00Z`.
    pub fn describe(&self) -> String {
        let at = rfc3339(self.at_ms);
        format!("{} by {} at {at}", self.verb, self.by.describe())
    }

    /// Whether an admin made it.
    pub fn is_admin(&self) -> bool {
        matches!(self.by, Actor::Admin(_))
    }
}

/// A source's declaration of a version of a plugin.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Declared {
    /// The plugin declared.
    pub plugin: String,
    /// `file /plugins/prefer.wasm`, `--plugin prefer.wasm`, `Plugin prefer`.
    pub source: String,
    /// Content hash.
    pub version: String,
    /// Declared as a shadow (else live).
    pub shadow: bool,
    /// The declaration as of now: the source and what it says (a file's
    /// hash, an object's generation). A changed source is a new key.
    pub key: String,
}

/// The record: the latest act per plugin, acts not yet taken by the
/// driver, and what each source declares.
#[derive(Clone, Debug, Default)]
pub struct Intent {
    latest: BTreeMap<String, Act>,
    fresh: Vec<Act>,
    /// Declarations by source.
    declared: BTreeMap<String, Declared>,
}

/// `ms` since the epoch as RFC 3339, to the second.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// Wall-clock milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl Intent {
    /// Records an act, made now, over the declarations standing for its plugin.
    pub fn record(&mut self, plugin: &str, verb: &str, version: &str, replaced: Option<String>, by: Actor) -> Act {
        let over = self.declared.values().filter(|d| d.plugin == plugin).map(|d| d.key.clone()).collect();
        let act = Act {
            plugin: plugin.to_string(),
            verb: verb.to_string(),
            version: version.to_string(),
            replaced: replaced.filter(|r| r != version),
            by,
            at_ms: now_ms(),
            over,
        };
        self.latest.insert(plugin.to_string(), act.clone());
        self.fresh.push(act.clone());
        act
    }

    /// An act adopted as made elsewhere (a decision another replica, or
    /// this one before a restart, made): latest for its plugin, not fresh.
    pub fn adopt(&mut self, act: Act) {
        self.latest.insert(act.plugin.clone(), act);
    }

    /// The latest act on `plugin`.
    pub fn latest(&self, plugin: &str) -> Option<&Act> {
        self.latest.get(plugin)
    }

    /// Acts recorded since the last call.
    pub fn take_fresh(&mut self) -> Vec<Act> {
        std::mem::take(&mut self.fresh)
    }

    /// Sets what `source` declares (`None`: nothing any more).
    pub fn declare(&mut self, source: &str, d: Option<Declared>) {
        match d {
            Some(d) => self.declared.insert(source.to_string(), d),
            None => self.declared.remove(source),
        };
    }

    /// Whether an admin decision on `plugin` stands over the declaration
    /// `key`: it was made while `key` held, and nothing acted since.
    pub fn held_by_admin(&self, plugin: &str, key: &str) -> Option<&Act> {
        self.latest.get(plugin).filter(|a| a.is_admin() && a.over.iter().any(|k| k == key))
    }

    /// Whether a declaration that stood under `act` has changed since (a
    /// file rewritten, a newer object generation): the newer word, which
    /// supersedes the decision. A source not known yet supersedes nothing.
    pub fn superseded(&self, act: &Act) -> Option<String> {
        act.over.iter().find_map(|k| {
            let (source, _) = k.rsplit_once('@')?;
            let now = self.declared.get(source)?;
            (now.key != *k).then(|| format!("{source} now declares version {}", now.version))
        })
    }

    /// Where what runs (`live`, `shadow`: content hashes) differs from what
    /// a source declares: one line per source, naming both sides and the
    /// latest act.
    pub fn drift(&self, plugin: &str, live: Option<&str>, shadow: Option<&str>) -> Vec<String> {
        let mut out = Vec::new();
        for d in self.declared.values().filter(|d| d.plugin == plugin) {
            let (mode, actual) = if d.shadow { ("shadow", shadow) } else { ("live", live) };
            if actual == Some(d.version.as_str()) {
                continue;
            }
            let runs = match (live, shadow) {
                (Some(l), Some(s)) => format!("{l} runs live, {s} as its shadow"),
                (Some(l), None) => format!("{l} runs live"),
                _ => "no version runs".into(),
            };
            let why = self.latest(plugin).map(|a| format!(" ({})", a.describe())).unwrap_or_default();
            out.push(format!("{} declares version {} {mode}; {runs}{why}", d.source, d.version, mode = mode));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(source: &str, version: &str, shadow: bool) -> Declared {
        Declared {
            plugin: "p".into(),
            source: source.into(),
            version: version.into(),
            shadow,
            key: format!("{source}@{version}"),
        }
    }

    #[test]
    fn an_admin_decision_holds_over_what_stood_when_it_was_made() {
        let mut i = Intent::default();
        i.declare("file", Some(declared("file /d/p.wasm", "v2", false)));
        let act = i.record("p", "rollback", "v1", Some("v2".into()), Actor::Admin("alice".into()));
        assert_eq!(act.over, ["file /d/p.wasm@v2"]);
        assert!(i.held_by_admin("p", "file /d/p.wasm@v2").is_some());
        assert!(i.held_by_admin("p", "file /d/p.wasm@v3").is_none(), "a changed file is a newer word");
        let drift = i.drift("p", Some("v1"), None);
        assert_eq!(drift.len(), 1);
        assert!(
            drift[0].starts_with("file /d/p.wasm declares version v2 live; v1 runs live (rollback by admin alice at ")
        );
        // A declaration acting afterwards replaces the decision.
        i.record("p", "live", "v3", Some("v1".into()), Actor::Source("file /d/p.wasm".into()));
        assert!(i.held_by_admin("p", "file /d/p.wasm@v2").is_none());
        assert_eq!(i.take_fresh().len(), 2);
        assert!(i.take_fresh().is_empty());
    }

    #[test]
    fn a_shadow_declared_and_promoted_is_drift_until_the_declaration_follows() {
        let mut i = Intent::default();
        i.declare("obj", Some(declared("Plugin p", "v2", true)));
        assert!(i.drift("p", Some("v1"), Some("v2")).is_empty());
        i.record("p", "promote", "v2", Some("v1".into()), Actor::Admin("bob".into()));
        let d = i.drift("p", Some("v2"), None);
        assert!(d[0].starts_with("Plugin p declares version v2 shadow; v2 runs live (promote by admin bob"), "{d:?}");
        i.declare("obj", Some(declared("Plugin p", "v2", false)));
        assert!(i.drift("p", Some("v2"), None).is_empty());
    }
}
