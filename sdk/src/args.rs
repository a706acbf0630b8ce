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
