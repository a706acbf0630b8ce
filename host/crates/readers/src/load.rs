//! Loading the files a command names: manifests, or workload traces ending in `.csv`.

use crate::manifest::{parse, Timed};
use anyhow::{bail, Result};

/// Reads and parses files (manifests, or traces ending in `.csv`); a
/// missing or unreadable file is an error naming it.
pub fn load(paths: &[std::path::PathBuf]) -> Result<Vec<Timed>> {
    let mut out = Vec::new();
    // The same object twice at the same moment is a mistake (a later
    // arrival replacing it is an update): first seen where.
    let mut seen: std::collections::HashMap<(&'static str, String, u64), String> = Default::default();
    for p in paths {
        let text = crate::files::read_text(p)?;
        let origin = p.display().to_string();
        // A `.csv` file is a workload trace (crate::trace).
        let objects = match p.extension().and_then(|e| e.to_str()) {
            Some("csv") => crate::trace::objects(&crate::trace::read(&text, &origin)?)?,
            _ => parse(&text, &origin)?,
        };
        for t in objects {
            if let Some((kind, name)) = t.object.identity() {
                if let Some(first) = seen.insert((kind, name.clone(), t.at.to_bits()), origin.clone()) {
                    let also = if first == origin {
                        "earlier in the same file".to_string()
                    } else {
                        format!("also in {first}")
                    };
                    bail!("{origin}: {kind} {name}: defined twice ({also})");
                }
            }
            out.push(t);
        }
    }
    Ok(out)
}
