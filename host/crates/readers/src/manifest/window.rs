//! The `Reservation` kind (tephra.io/v1alpha1): an advance reservation, read
//! with every mistake named by its field.

use super::fields::{boolean, count, get, map, parse_time, seq, string, At, Doc};
use super::object::Object;
use anyhow::Result;
use tephra_model::window::{AdvanceReservation, Repeat};
use yaml_serde::Value;

/// Reads a `Reservation`'s spec.
pub(super) fn read(d: Doc) -> Result<Object> {
    Ok(Object::Reservation(reservation(d.at, d.v, d.meta.name)?))
}

fn reservation(at: &At, v: &Value, name: String) -> Result<AdvanceReservation> {
    let duration = |path: &str| -> Result<Option<i64>> {
        match string(at, v, path)? {
            None => Ok(None),
            Some(s) => match tephra_model::duration::duration_ms(&s) {
                Some(ms) if ms > 0 => Ok(Some(ms)),
                _ => Err(at.err(path, format!("{s:?} is not a positive duration (like 30m, 2h)"))),
            },
        }
    };
    let floating = boolean(at, v, "spec.floating")?.unwrap_or(false);
    let start_ms = match (floating, string(at, v, "spec.start")?, duration("spec.startsIn")?) {
        (false, Some(s), None) => {
            parse_time(&s).ok_or_else(|| at.err("spec.start", format!("{s:?} is not an RFC 3339 UTC time")))? * 1000
        }
        (false, None, _) => return Err(at.err("spec.start", "missing (or set floating: true with startsIn)")),
        (false, Some(_), Some(_)) => return Err(at.err("spec.startsIn", "only a floating reservation has one")),
        (true, None, Some(ms)) => ms,
        (true, _, None) => return Err(at.err("spec.startsIn", "missing: a floating window stays this far ahead")),
        (true, Some(_), Some(_)) => return Err(at.err("spec.start", "a floating reservation has startsIn instead")),
    };
    let repeat = match string(at, v, "spec.repeat")?.as_deref() {
        None => None,
        Some("daily") => Some(Repeat::Daily),
        Some("weekly") => Some(Repeat::Weekly),
        Some(other) => return Err(at.err("spec.repeat", format!("{other:?} is not daily or weekly"))),
    };
    if repeat.is_some() && floating {
        return Err(at.err("spec.repeat", "a floating window does not repeat"));
    }
    let duration_ms = duration("spec.duration")?.ok_or_else(|| at.err("spec.duration", "missing"))?;
    if repeat.is_some_and(|r| duration_ms >= r.period_ms()) {
        return Err(at.err("spec.duration", "a repeating window must be shorter than its period"));
    }
    let names = |path: &str| -> Result<Vec<String>> {
        seq(at, v, path)?
            .iter()
            .enumerate()
            .map(|(i, x)| {
                crate::config::scalar_string(x).ok_or_else(|| at.err(&format!("{path}[{i}]"), "expected a name"))
            })
            .collect()
    };
    let (queues, namespaces) = (names("spec.queues")?, names("spec.namespaces")?);
    let maintenance = boolean(at, v, "spec.maintenance")?.unwrap_or(false);
    if maintenance && !(queues.is_empty() && namespaces.is_empty()) {
        return Err(at.err("spec.maintenance", "a maintenance window serves no one: drop queues and namespaces"));
    }
    if !maintenance && queues.is_empty() && namespaces.is_empty() {
        return Err(at.err("spec.queues", "name the queues or namespaces it serves, or set maintenance: true"));
    }
    if get(v, "spec.nodes").is_some_and(|n| !n.is_mapping()) {
        return Err(at.err("spec.nodes", "expected a mapping with selector and/or count"));
    }
    Ok(AdvanceReservation {
        name,
        start_ms,
        duration_ms,
        repeat,
        floating,
        node_selector: map(at, v, "spec.nodes.selector")?,
        node_count: count(at, v, "spec.nodes.count")?.map(|c| c as usize),
        queues,
        namespaces,
        maintenance,
    })
}
