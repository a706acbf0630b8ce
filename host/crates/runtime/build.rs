//! Builds every crate under `plugins/` as a `wasm32-wasip2` component and
//! embeds them, so a fresh `cargo run` has the default policies.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    // host/crates/runtime → the repository.
    let root = manifest.ancestors().nth(3).unwrap().to_path_buf();
    for dir in ["plugins", "tests/plugins", "sdk", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let mut plugins = crates(&root.join("plugins"));
    // For work in progress: plugins named here (comma list) are not built.
    println!("cargo:rerun-if-env-changed=TEPHRA_SKIP_PLUGINS");
    if let Ok(skip) = env::var("TEPHRA_SKIP_PLUGINS") {
        plugins.retain(|p| !skip.split(',').any(|s| s.trim() == p));
    }
    let fixtures = crates(&root.join("tests/plugins"));
    for (dir, list) in [("plugins", &plugins), ("tests/plugins", &fixtures)] {
        for p in list {
            println!("cargo:rerun-if-changed={}", root.join(dir).join(p).join("src").display());
        }
    }
    ensure_target();
    // OUT_DIR is <target>/<profile>/build/<pkg>/out.
    let target = out.ancestors().nth(4).unwrap().join("plugins");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
        .args(["build", "--profile", "plugin", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(&target);
    for p in plugins.iter().chain(&fixtures) {
        cmd.args(["-p", &format!("plugin-{p}")]);
    }
    for var in
        ["CARGO_ENCODED_RUSTFLAGS", "RUSTFLAGS", "CARGO_BUILD_TARGET", "RUSTC_WORKSPACE_WRAPPER", "RUSTC_WRAPPER"]
    {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("running cargo to build the plugins");
    assert!(status.success(), "building the plugins for wasm32-wasip2 failed");
    let built = |p: &str| target.join("wasm32-wasip2/plugin").join(format!("plugin_{}.wasm", p.replace('-', "_")));
    let mut src = String::from(
        "/// (name, component bytes) of every default plugin.\npub const PLUGINS: &[(&str, &[u8])] = &[\n",
    );
    for p in &plugins {
        let wasm = built(p);
        assert!(wasm.exists(), "missing {}", wasm.display());
        src.push_str(&format!("    ({p:?}, include_bytes!({:?})),\n", path_str(&wasm)));
    }
    src.push_str("];\n");
    // Test fixtures are not embedded: they are copied as `<name>.wasm` into a
    // directory usable as `--plugins-dir`.
    let fixtures_dir = target.join("fixtures");
    fs::create_dir_all(&fixtures_dir).unwrap();
    // Versions of one plugin for swap tests (`prefer-*`, all named "prefer")
    // go to `swap/`, components the host must refuse (`wrong-*`) to
    // `hostile/`: the fixtures directory itself stays a valid plugins dir.
    for sub in ["swap", "hostile"] {
        fs::create_dir_all(fixtures_dir.join(sub)).unwrap();
    }
    for p in &fixtures {
        let dest = if p.starts_with("prefer-") {
            fixtures_dir.join("swap")
        } else if p.starts_with("wrong-") {
            fixtures_dir.join("hostile")
        } else {
            fixtures_dir.clone()
        };
        fs::copy(built(p), dest.join(format!("{p}.wasm"))).unwrap();
    }
    src.push_str(&format!(
        "/// Directory of the test-fixture plugins (`tests/plugins`), one `<name>.wasm` each.\npub const FIXTURES_DIR: &str = {:?};\n",
        path_str(&fixtures_dir)
    ));
    fs::write(out.join("builtin_plugins.rs"), src).unwrap();
}

/// Names of the crates (directories with a Cargo.toml) under `dir`, sorted.
fn crates(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().join("Cargo.toml").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
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
