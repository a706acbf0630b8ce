//! Entry points for the fuzz targets (`fuzz/`, `./dev fuzz`) and their
//! regression corpus (the tests below): arbitrary bytes through the input
//! readers must give a value or an error, never a panic.

use tephra_model::cluster::Cluster;
use tephra_readers::manifest::{parse, Object};

/// Manifest text: read it, and what reads is put in a cluster, validated
/// and snapshotted as `tephra simulate` would.
pub fn manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(objects) = parse(text, "fuzz.yaml") else { return };
    let mut c = Cluster::default();
    for t in objects {
        match t.object {
            Object::Node(n) => c.nodes.push(n),
            Object::Queue(q) => c.queues.push(q),
            Object::PodGroup(g) => c.podgroups.push(g),
            Object::Pod(p) => c.pods.push(*p),
            Object::Config(_) => {}
            keyed => {
                keyed.keep_in(&mut c);
            }
        }
    }
    let _ = tephra_readers::validate::rules(&c.queues);
    let _ = c.dangling();
    let _ = crate::build(&c, &Default::default(), 0);
}

/// A scheduler config.
pub fn config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = tephra_readers::config::SchedulerConfig::parse(text, "fuzz.conf");
    }
}

/// Quantities and durations, each line one.
pub fn quantity(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let _ = tephra_model::resource::parse_quantity(line);
        let _ = tephra_model::resource::parse_resource("memory", line);
        let _ = tephra_model::duration::duration_ms(line);
        let _ = tephra_model::text::one_line(line, 16);
    }
}

/// Runs `target` over every file of `fuzz/regressions/<name>/`: the cases
/// fuzzing found, kept so that they stay fixed.
#[cfg(test)]
pub(crate) fn regressions(name: &str, target: fn(&[u8])) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../fuzz/regressions").join(name);
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = e.unwrap().path();
        target(&std::fs::read(&path).unwrap());
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_corpus_reads_without_panics() {
        assert!(regressions("manifest", manifest) > 0);
        assert!(regressions("config", config) > 0);
        assert!(regressions("quantity", quantity) > 0);
    }
}
