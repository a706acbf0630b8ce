//! Logging through the host (plugin output is tagged with the plugin name).

use crate::bindings::tephra::scheduler::host::{self, Level};

fn emit(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    host::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    eprintln!("[{level:?}] {message}");
}

pub fn error(message: &str) {
    emit(Level::Error, message)
}
pub fn warn(message: &str) {
    emit(Level::Warn, message)
}
pub fn info(message: &str) {
    emit(Level::Info, message)
}
pub fn debug(message: &str) {
    emit(Level::Debug, message)
}

/// The reason for the answer this call is about to give — a refusal's
/// resource and amounts (`needs cpu 64; queue default can admit 24 (…)`).
/// The host shows it where the refusal lands (pod and PodGroup conditions,
/// Events, the simulator's report) instead of a generic line. The last one
/// given during a call counts.
pub fn why(message: &str) {
    #[cfg(target_arch = "wasm32")]
    host::log(Level::Debug, &format!("why: {message}"));
    #[cfg(not(target_arch = "wasm32"))]
    let _ = message;
}

/// The display name of an object, for explanations.
pub fn name(kind: host::Kind, id: u32) -> String {
    #[cfg(target_arch = "wasm32")]
    return host::name(kind, id);
    #[cfg(not(target_arch = "wasm32"))]
    format!("{kind:?}#{id}")
}
