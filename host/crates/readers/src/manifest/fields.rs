//! The field readers every kind uses: each error names the file, the
//! object and the field's path.

use crate::config::scalar_string;
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;
use tephra_model::resource::{self, ResourceList};
use yaml_serde::Value;

/// Where an error happened: `file: Kind ns/name: field`.
pub(super) struct At<'a> {
    pub(super) origin: &'a str,
    pub(super) object: String,
}

impl<'a> At<'a> {
    /// Where errors about document `v` of `origin` point (`Kind ns/name`),
    /// and its kind.
    pub(super) fn of<'v>(origin: &'a str, v: &'v Value) -> (Self, &'v str) {
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = get(v, "metadata.name").and_then(Value::as_str).unwrap_or("?");
        let object = match get(v, "metadata.namespace").and_then(Value::as_str) {
            Some(ns) => format!("{kind} {ns}/{name}"),
            None => format!("{kind} {name}"),
        };
        (At { origin, object }, kind)
    }

    pub(super) fn err(&self, field: &str, msg: impl std::fmt::Display) -> anyhow::Error {
        anyhow!("{}: {}: {field}: {msg}", self.origin, self.object)
    }
}

/// The value at a dotted path; a segment `name[i]` is item `i` of a list.
pub(super) fn get<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.')
        .try_fold(v, |v, k| match k.split_once('[') {
            Some((name, i)) => v.get(name)?.get(i.strip_suffix(']')?.parse::<usize>().ok()?),
            None => v.get(k),
        })
        .filter(|v| !v.is_null())
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

/// An `int64` field. kubectl reads YAML 1.1 (go-yaml v2) before the API
/// server sees JSON, so a plain scalar means what it means there: `1e3` is
/// 1000, `017` is octal (15), `0o17`, `0x1f` and `0b101` carry their base, and
/// `1_000` is 1000. This reader's YAML is 1.2, which reads some of these as
/// other numbers or as strings; the scalar is read again by the 1.1 rules.
pub(super) fn int64(at: &At, v: &Value, path: &str) -> Result<Option<i64>> {
    let integral = |f: f64| (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64);
    match get(v, path) {
        None => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().and_then(integral))
            .map(Some)
            .ok_or_else(|| at.err(path, format!("{n} is not an integer"))),
        Some(Value::String(s)) => go_int(s)
            .or_else(|| go_float(s).and_then(integral))
            .map(Some)
            .ok_or_else(|| at.err(path, format!("{s:?} is not an integer"))),
        Some(_) => Err(at.err(path, "expected an integer")),
    }
}

/// An integer as go-yaml v2 resolves a plain scalar: underscores dropped,
/// then Go's `ParseInt(s, 0, 64)` (a `0x`, `0o` or `0b` prefix, or a leading
/// `0` for octal).
fn go_int(s: &str) -> Option<i64> {
    let plain = s.replace('_', "");
    let (neg, digits) = match plain.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, plain.strip_prefix('+').unwrap_or(&plain)),
    };
    let (radix, digits) = match digits.get(..2) {
        Some("0x" | "0X") => (16, &digits[2..]),
        Some("0o" | "0O") => (8, &digits[2..]),
        Some("0b" | "0B") => (2, &digits[2..]),
        _ if digits.len() > 1 && digits.starts_with('0') => (8, &digits[1..]),
        _ => (10, digits),
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = i64::from_str_radix(digits, radix).ok()?;
    Some(if neg { -magnitude } else { magnitude })
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

/// A float as go-yaml v2 resolves a plain scalar that is no integer
/// (`09`, `1e3`, `.5`): its float pattern, then Go's `ParseFloat`.
fn go_float(s: &str) -> Option<f64> {
    let plain = s.replace('_', "");
    let (mantissa, exponent) = match plain.find(['e', 'E']) {
        Some(i) => (&plain[..i], Some(&plain[i + 1..])),
        None => (plain.as_str(), None),
    };
    let mantissa = mantissa.strip_prefix(['+', '-']).unwrap_or(mantissa);
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(whole) && digits(frac) && !(whole.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    (mantissa_ok && exponent_ok).then(|| plain.parse().ok()).flatten()
}

/// A boolean field. go-yaml v2 (kubectl's YAML) reads YAML 1.1's words as
/// booleans too (`yes`, `on`, `y` and their capitalised forms; `no`, `off`,
/// `n`), so such a field reads them as the API server then gets them.
pub(super) fn boolean(at: &At, v: &Value, path: &str) -> Result<Option<bool>> {
    match get(v, path) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) => match s.as_str() {
            "true" | "True" | "TRUE" | "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Ok(Some(true)),
            "false" | "False" | "FALSE" | "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Ok(Some(false)),
            _ => Err(at.err(path, format!("{s:?} is not true or false"))),
        },
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
