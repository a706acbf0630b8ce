//! Policies written in Python and JavaScript, built by `./dev test` into
//! `$TEPHRA_GUESTS_DIR`, loaded by the host and run through the simulator.
//! Plain `cargo test` (no guests built) says so and checks nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn guest(file: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("TEPHRA_GUESTS_DIR")?;
    let p = Path::new(&dir).join(file);
    assert!(p.exists(), "TEPHRA_GUESTS_DIR is set but {} was not built", p.display());
    Some(p)
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

fn binds(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("bind"))
        .filter_map(|l| l.trim().split_once(" → "))
        .map(|(p, n)| (p.to_string(), n.to_string()))
        .collect()
}

#[test]
fn python_fair_team_orders_jobs_by_team_usage() {
    let Some(wasm) = guest("fair-team.wasm") else {
        eprintln!("TEPHRA_GUESTS_DIR not set: run ./dev test to build and check the Python guest");
        return;
    };
    let text = simulate("examples/plugins/python/cluster.yaml", &wasm);
    let order: Vec<String> = binds(&text).into_iter().map(|(p, _)| p).collect();
    // usage: team-b 5 < team-c 40 < team-a 120; one job fits at a time.
    assert_eq!(order, ["team-b/train-b-t-0", "team-c/train-c-t-0", "team-a/train-a-t-0"], "{text}");
}

#[test]
fn javascript_spread_label_prefers_the_label_and_spreads() {
    let Some(wasm) = guest("spread-label.wasm") else {
        eprintln!("TEPHRA_GUESTS_DIR not set: run ./dev test to build and check the JavaScript guest");
        return;
    };
    let text = simulate("examples/plugins/js/cluster.yaml", &wasm);
    let b = binds(&text);
    assert_eq!(b.len(), 4, "{text}");
    let on = |n: &str| b.iter().filter(|(_, node)| node == n).count();
    assert_eq!((on("east-1"), on("east-2"), on("west-1")), (2, 2, 0), "{text}");
}
