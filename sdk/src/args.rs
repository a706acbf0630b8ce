//! Plugin arguments from the scheduler config, with typed getters.

use std::collections::HashMap;

/// A plugin's `arguments` map; values arrive as strings.
#[derive(Default, Clone, Debug)]
pub struct Args(pub HashMap<String, String>);

impl Args {
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        Args(pairs.into_iter().collect())
    }
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
    /// A number argument; an unparsable value is an error naming the key.
    pub fn f64(&self, key: &str, default: f64) -> Result<f64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| format!("argument {key}: {v:?} is not a number")),
        }
    }
    /// A duration argument (Go syntax), in milliseconds.
    pub fn duration(&self, key: &str) -> Result<Option<f64>, String> {
        self.get(key)
            .map(|v| parse_duration(v).ok_or_else(|| format!("argument {key}: {v:?} is not a duration")))
            .transpose()
    }
    /// A boolean argument ("true"/"false").
    pub fn bool(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => match v.trim() {
                "true" | "True" => Ok(true),
                "false" | "False" => Ok(false),
                _ => Err(format!("argument {key}: {v:?} is not true or false")),
            },
        }
    }
}

/// Parses a Go duration (`1h30m`, `45s`, `500ms`) into milliseconds.
pub fn parse_duration(s: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let value: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let ms = match &rest[..unit_len] {
            "h" => 3_600_000.0,
            "m" => 60_000.0,
            "s" => 1_000.0,
            "ms" => 1.0,
            "us" | "µs" => 1e-3,
            "ns" => 1e-6,
            _ => return None,
        };
        total += value * ms;
        rest = &rest[unit_len..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1h30m"), Some(5_400_000.0));
        assert_eq!(parse_duration("45s"), Some(45_000.0));
        assert_eq!(parse_duration("1.5s"), Some(1_500.0));
        assert_eq!(parse_duration("500ms"), Some(500.0));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("90"), None);
        assert_eq!(parse_duration(""), None);
    }
}
