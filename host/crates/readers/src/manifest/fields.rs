//! The field readers every kind uses: each error names the file, the
//! object and the field's path.

use crate::config::scalar_string;
use anyhow::{anyhow, Result};
use serde_yaml::Value;
use std::collections::BTreeMap;
use tephra_model::resource::{self, ResourceList};

/// Where an error happened: `file: Kind ns/name: field`.
pub(super) struct At<'a> {
    pub(super) origin: &'a str,
    pub(super) object: String,
}

impl At<'_> {
    pub(super) fn err(&self, field: &str, msg: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("{}: {}: {field}: {msg}", self.origin, self.object)
    }
}

pub(super) fn get<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(v, |v, k| v.get(k)).filter(|v| !v.is_null())
}

pub(super) fn string(at: &At, v: &Value, path: &str) -> Result<Option<String>> {
    match get(v, path) {
        None => Ok(None),
        Some(x) => scalar_string(x).map(Some).ok_or_else(|| at.err(path, "expected a string")),
    }
}

pub(super) fn map(at: &At, v: &Value, path: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if let Some(m) = get(v, path) {
        let m = m.as_mapping().ok_or_else(|| at.err(path, "expected a mapping"))?;
        for (k, val) in m {
            let k = k.as_str().unwrap_or_default().to_string();
            let val = scalar_string(val).ok_or_else(|| at.err(&format!("{path}.{k}"), "expected a scalar"))?;
            out.insert(k, val);
        }
    }
    Ok(out)
}

/// An `int64` field.
pub(super) fn int64(at: &At, v: &Value, path: &str) -> Result<Option<i64>> {
    match get(v, path) {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(|| at.err(path, format!("{n} is not an integer"))),
        Some(Value::String(s)) => s.parse().map(Some).map_err(|_| at.err(path, format!("{s:?} is not an integer"))),
        Some(_) => Err(at.err(path, "expected an integer")),
    }
}

/// An `int32` field, as Kubernetes declares nearly all of them: a value out
/// of its range is refused, never wrapped.
pub(super) fn int(at: &At, v: &Value, path: &str) -> Result<Option<i64>> {
    let n = int64(at, v, path)?;
    match n {
        Some(n) if i32::try_from(n).is_err() => Err(at.err(path, format!("{n} is out of the int32 range"))),
        _ => Ok(n),
    }
}

/// An `int32` field that counts something: not negative.
pub(super) fn count(at: &At, v: &Value, path: &str) -> Result<Option<u32>> {
    match int(at, v, path)? {
        Some(n) if n < 0 => Err(at.err(path, format!("{n} is negative"))),
        n => Ok(n.map(|n| n as u32)),
    }
}

pub(super) fn boolean(at: &At, v: &Value, path: &str) -> Result<Option<bool>> {
    match get(v, path) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(_) => Err(at.err(path, "expected true or false")),
    }
}

/// A ResourceList in internal units.
pub(super) fn resources(at: &At, v: &Value, path: &str) -> Result<ResourceList> {
    let mut out = ResourceList::new();
    for (k, q) in map(at, v, path)? {
        let value = resource::parse_resource(&k, &q).map_err(|e| at.err(&format!("{path}.{k}"), e))?;
        // Kubernetes refuses negative quantities; one would add room.
        if value < 0.0 {
            return Err(at.err(&format!("{path}.{k}"), format!("{q:?} is negative")));
        }
        out.insert(k, value);
    }
    Ok(out)
}

pub(super) fn seq<'v>(at: &At, v: &'v Value, path: &str) -> Result<&'v [Value]> {
    match get(v, path) {
        None => Ok(&[]),
        Some(Value::Sequence(s)) => Ok(s),
        Some(_) => Err(at.err(path, "expected a list")),
    }
}

/// An RFC 3339 UTC time ("2024-01-02T03:04:05Z") from ms since the epoch.
pub fn format_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| format!("{ms}ms"))
}

/// Seconds since the Unix epoch of an RFC 3339 UTC time ("2024-01-02T03:04:05Z").
pub fn parse_time(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (n(0..4)?, n(5..7)?, n(8..10)?, n(11..13)?, n(14..16)?, n(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (mo + if mo > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some(days * 86400 + h * 3600 + mi * 60 + se)
}

/// The metadata fields tephra reads.
pub(super) struct Meta {
    pub(super) name: String,
    pub(super) namespace: String,
    pub(super) annotations: BTreeMap<String, String>,
    pub(super) labels: BTreeMap<String, String>,
    /// Milliseconds since the epoch, or the document's position when unset.
    pub(super) created: i64,
}

pub(super) fn meta(at: &At, v: &Value, seqno: i64) -> Result<Meta> {
    let name = string(at, v, "metadata.name")?.ok_or_else(|| at.err("metadata.name", "missing"))?;
    let namespace = string(at, v, "metadata.namespace")?.unwrap_or_else(|| "default".into());
    let created = match string(at, v, "metadata.creationTimestamp")? {
        Some(t) => parse_time(&t).ok_or_else(|| at.err("metadata.creationTimestamp", "expected RFC 3339 time"))? * 1000,
        None => seqno,
    };
    let annotations = map(at, v, "metadata.annotations")?;
    tephra_model::timelimit::check(&annotations)
        .map_err(|(key, why)| at.err(&format!("metadata.annotations.{key}"), why))?;
    Ok(Meta { name, namespace, annotations, labels: map(at, v, "metadata.labels")?, created })
}

/// What a kind's reader gets: the document, where its errors point, and the
/// metadata every kind has.
pub(super) struct Doc<'a> {
    pub(super) at: &'a At<'a>,
    pub(super) v: &'a Value,
    pub(super) kind: &'a str,
    pub(super) meta: Meta,
}
