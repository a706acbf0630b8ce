//! Policies written in Python, JavaScript and Go, built by `./dev test` into
//! `$TEPHRA_GUESTS_DIR` (on the SDKs, and as they were for contract 0.4.0),
//! loaded by the host, run through the simulator and `tephra plugin test`.
//! A plain `cargo test` reports these as ignored (the guests are not built
//! there); `./dev test` builds them and runs these with `--include-ignored`.
//! Run without the guests, each fails and says how to build them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A guest component `./dev test` built; a failure says how to build it.
fn guest(file: &str) -> PathBuf {
    let dir = std::env::var_os("TEPHRA_GUESTS_DIR").unwrap_or_else(|| {
        panic!("TEPHRA_GUESTS_DIR is not set: run ./dev test, which builds the guests into target/guests")
    });
    let p = Path::new(&dir).join(file);
    assert!(p.exists(), "TEPHRA_GUESTS_DIR is set but {} was not built (run ./dev test)", p.display());
    p
}

fn simulate(example: &str, plugin: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tephra"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .args(["simulate", example, "--plugin"])
        .arg(plugin)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains("FAULT"), "{text}");
    text
}

/// `tephra` with these arguments, from the repository: (success, stdout).
fn tephra(args: &[&str], plugin: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tephra"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .args(&args[..2])
        .arg(plugin)
        .args(&args[2..])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// The component exports the points of its policy and nothing else and
/// passes its own scenarios; returns its path.
fn check_points(name: &str, points: &[&str], example: &str, cases: usize) -> PathBuf {
    let wasm = guest(&format!("{name}.wasm"));
    let (ok, text) = tephra(&["plugin", "check"], &wasm);
    assert!(ok, "{text}");
    let implements: Vec<&str> = text.lines().filter_map(|l| l.trim().strip_prefix("implements ")).collect();
    assert_eq!(implements, points, "{text}");
    assert!(text.contains(&format!("(contract {})", tephra::contract::CONTRACT)), "{text}");
    let scenarios = format!("examples/plugins/{example}/scenarios.yaml");
    let (ok, text) = tephra(&["plugin", "test", &scenarios], &wasm);
    assert!(ok, "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("pass ")).count(), cases, "{text}");
    wasm
}

/// As `check_points`, and the component's 0.4.0 build schedules the example alike.
fn check_guest(name: &str, point: &str, example: &str, cases: usize) {
    let wasm = check_points(name, &[point], example, cases);
    let old = guest(&format!("{name}-0.4.0.wasm"));
    let (ok, text) = tephra(&["plugin", "check"], &old);
    assert!(ok && text.contains("(contract 0.4.0)") && text.contains(&format!("implements {point}")), "{text}");
    let cluster = format!("examples/plugins/{example}/cluster.yaml");
    assert_eq!(simulate(&cluster, &old), simulate(&cluster, &wasm), "{name}: 0.4.0 and 0.7.0 builds differ");
}

/// A large component (the Python one is 18 MB, 5-10 s of Cranelift) is
/// compiled once: the next start reads its compiled code from the disk cache.
#[test]
#[ignore = "needs the Python, JavaScript and Go guests ./dev test builds (TEPHRA_GUESTS_DIR)"]
fn a_large_component_is_compiled_once_and_read_from_the_disk_cache_after() {
    let wasm = guest("fair-team.wasm");
    assert!(std::fs::metadata(&wasm).unwrap().len() > 10 << 20);
    let cache = std::env::temp_dir().join(format!("tephra-guests-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let check = || {
        let out = Command::new(env!("CARGO_BIN_EXE_tephra"))
            .env("TEPHRA_CACHE_DIR", &cache)
            .args(["plugin", "check"])
            .arg(&wasm)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let first = check();
    assert!(first.contains("compiled now, kept in the disk cache"), "{first}");
    let second = check();
    assert!(second.contains("compiled code read from the disk cache"), "{second}");
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
#[ignore = "needs the Python, JavaScript and Go guests ./dev test builds (TEPHRA_GUESTS_DIR)"]
fn python_guest_exports_its_point_passes_its_scenarios_and_its_0_4_build_agrees() {
    check_guest("fair-team", "job-order", "python", 2);
}

#[test]
#[ignore = "needs the Python, JavaScript and Go guests ./dev test builds (TEPHRA_GUESTS_DIR)"]
fn javascript_guest_exports_its_point_passes_its_scenarios_and_its_0_4_build_agrees() {
    check_guest("spread-label", "node-order", "js", 3);
}

#[test]
#[ignore = "needs the Python, JavaScript and Go guests ./dev test builds (TEPHRA_GUESTS_DIR)"]
fn go_guest_exports_its_points_and_passes_its_scenarios() {
    check_points("gpu-pack", &["predicate", "node-order"], "go", 3);
}

#[test]
#[ignore = "needs the Python, JavaScript and Go guests ./dev test builds (TEPHRA_GUESTS_DIR)"]
fn go_gpu_pack_keeps_gpu_nodes_for_gpu_tasks_and_packs_them() {
    let wasm = guest("gpu-pack.wasm");
    let text = simulate("examples/plugins/go/cluster.yaml", &wasm);
    let mut b = binds(&text);
    b.sort();
    let want = [("data/etl-t-0", "cpu-1"), ("ml/tune-t-0", "gpu-b"), ("ml/tune-t-1", "gpu-b")];
    assert_eq!(b, want.map(|(p, n)| (p.to_string(), n.to_string())), "{text}");
}

fn binds(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("bind"))
        .filter_map(|l| l.trim().split_once(" → "))
        .map(|(p, n)| (p.to_string(), n.to_string()))
        .collect()
}

#[test]
#[ignore = "needs the Python, JavaScript and Go guests ./dev test builds (TEPHRA_GUESTS_DIR)"]
fn python_fair_team_orders_jobs_by_team_usage() {
    let wasm = guest("fair-team.wasm");
    let text = simulate("examples/plugins/python/cluster.yaml", &wasm);
    let order: Vec<String> = binds(&text).into_iter().map(|(p, _)| p).collect();
    // usage: team-b 5 < team-c 40 < team-a 120; one job fits at a time.
    assert_eq!(order, ["team-b/train-b-t-0", "team-c/train-c-t-0", "team-a/train-a-t-0"], "{text}");
}

#[test]
#[ignore = "needs the Python, JavaScript and Go guests ./dev test builds (TEPHRA_GUESTS_DIR)"]
fn javascript_spread_label_prefers_the_label_and_spreads() {
    let wasm = guest("spread-label.wasm");
    let text = simulate("examples/plugins/js/cluster.yaml", &wasm);
    let b = binds(&text);
    assert_eq!(b.len(), 4, "{text}");
    let on = |n: &str| b.iter().filter(|(_, node)| node == n).count();
    assert_eq!((on("east-1"), on("east-2"), on("west-1")), (2, 2, 0), "{text}");
}
