//! Builds every crate under `plugins/` as a `wasm32-wasip2` component and
//! embeds them, so a fresh `cargo run` has the default policies.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().to_path_buf();
    for dir in ["plugins", "sdk", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let mut plugins: Vec<String> = fs::read_dir(root.join("plugins"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    plugins.sort();
    // A comma list narrows the set (for work on a single plugin).
    println!("cargo:rerun-if-env-changed=TEPHRA_PLUGINS");
    if let Ok(only) = env::var("TEPHRA_PLUGINS") {
        plugins.retain(|p| only.split(',').any(|o| o.trim() == p));
    }
    for p in &plugins {
        println!("cargo:rerun-if-changed={}", root.join("plugins").join(p).join("src").display());
    }
    ensure_target();
    // OUT_DIR is <target>/<profile>/build/<pkg>/out.
    let target = out.ancestors().nth(4).unwrap().join("plugins");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--profile", "plugin", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(&target);
    for p in &plugins {
        cmd.args(["-p", &format!("plugin-{p}")]);
    }
    for var in ["CARGO_ENCODED_RUSTFLAGS", "RUSTFLAGS", "CARGO_BUILD_TARGET", "RUSTC_WORKSPACE_WRAPPER", "RUSTC_WRAPPER"] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("running cargo to build the plugins");
    assert!(status.success(), "building the plugins for wasm32-wasip2 failed");
    let mut src = String::from("/// (name, component bytes) of every default plugin.\npub const PLUGINS: &[(&str, &[u8])] = &[\n");
    for p in &plugins {
        let wasm = target.join("wasm32-wasip2/plugin").join(format!("plugin_{}.wasm", p.replace('-', "_")));
        assert!(wasm.exists(), "missing {}", wasm.display());
        src.push_str(&format!("    ({p:?}, include_bytes!({:?})),\n", path_str(&wasm)));
    }
    src.push_str("];\n");
    fs::write(out.join("builtin_plugins.rs"), src).unwrap();
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Installs the wasm32-wasip2 target when rustup lacks it (idempotent).
fn ensure_target() {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("wasm32-wasip2"))
        .unwrap_or(true);
    if !installed {
        let ok = Command::new("rustup").args(["target", "add", "wasm32-wasip2"]).status().map(|s| s.success());
        assert!(matches!(ok, Ok(true)), "rustup target add wasm32-wasip2 failed");
    }
}
