//! Watching a plugins directory: new or changed `.wasm` files are compiled
//! on a background thread, so cycles never wait for a compile.

use crate::library::{named, wasm_files};
use crate::{content_hash, Runtime, WasmPlugin};
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

/// A new version found by the [`Watcher`], compiled (or not).
pub struct Staged {
    /// The file it came from.
    pub origin: String,
    /// The compiled version, or why it did not compile.
    pub plugin: Result<WasmPlugin>,
}

/// Watches a plugins directory; new or changed `.wasm` files are compiled
/// on a background thread and handed over through [`Watcher::ready`].
pub struct Watcher {
    rx: Receiver<Staged>,
}

impl Watcher {
    /// Starts watching `dir`, polling every `every`; files present now count
    /// as already loaded.
    pub fn spawn(dir: &Path, runtime: Runtime, every: Duration) -> Result<Watcher> {
        let mut seen: BTreeMap<PathBuf, String> = BTreeMap::new();
        for f in wasm_files(dir)? {
            if let Ok(b) = tephra_readers::files::read(&f) {
                seen.insert(f, content_hash(&b));
            }
        }
        let (tx, rx) = channel();
        let dir = dir.to_path_buf();
        std::thread::Builder::new().name("tephra-plugin-watch".into()).spawn(move || loop {
            std::thread::sleep(every);
            let Ok(files) = wasm_files(&dir) else { continue };
            for f in files {
                let Ok(bytes) = tephra_readers::files::read(&f) else { continue };
                let hash = content_hash(&bytes);
                if seen.get(&f) == Some(&hash) {
                    continue;
                }
                seen.insert(f.clone(), hash);
                let origin = f.display().to_string();
                // The same name rule as at start-up.
                let plugin = WasmPlugin::load(&runtime, &bytes, &origin).and_then(|p| named(p, &f));
                if tx.send(Staged { origin, plugin }).is_err() {
                    return;
                }
            }
        })?;
        Ok(Watcher { rx })
    }

    /// Versions compiled since the last call.
    pub fn ready(&self) -> Vec<Staged> {
        self.rx.try_iter().collect()
    }
}
