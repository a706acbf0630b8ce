//! The layers drawn in docs/architecture.md are the crates' real order: every
//! crate under `host/crates/` is drawn, every drawn crate exists, and a crate
//! depends (normal, build or dev) only on crates drawn below it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The floors of the drawing, top first: each line of the "Layers" block that
/// names crates is a floor (crates on one line share it).
fn drawn_floors(doc: &str) -> Vec<Vec<String>> {
    let layers = doc.split("## Layers").nth(1).expect("docs/architecture.md has a \"## Layers\" section");
    let block = layers.split("```").nth(1).expect("the Layers section draws the crates in a ``` block");
    let mut floors = Vec::new();
    for line in block.lines() {
        // A crate is named at the start of a floor's line, before its description.
        let names: Vec<String> =
            line.split_whitespace().take_while(|w| w.starts_with("tephra")).map(|w| w.to_string()).collect();
        if !names.is_empty() {
            floors.push(names);
        }
    }
    floors
}

#[test]
fn crates_depend_only_on_layers_drawn_below_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let floors = drawn_floors(&doc);
    // Floor numbers count up from the ground.
    let floor: BTreeMap<String, usize> =
        floors.iter().rev().enumerate().flat_map(|(i, names)| names.iter().map(move |n| (n.clone(), i))).collect();
    assert!(floor.contains_key("tephra") && floor.contains_key("tephra-contract"), "drawn: {floors:?}");

    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let host = root.join("host").canonicalize().unwrap();
    let mut seen = Vec::new();
    let mut wrong = Vec::new();
    for p in meta["packages"].as_array().unwrap() {
        let manifest = Path::new(p["manifest_path"].as_str().unwrap()).canonicalize().unwrap();
        if !manifest.starts_with(&host) {
            continue;
        }
        let name = p["name"].as_str().unwrap().to_string();
        let Some(&mine) = floor.get(&name) else {
            wrong.push(format!("{name} ({}) is not drawn in docs/architecture.md", manifest.display()));
            continue;
        };
        seen.push(name.clone());
        for d in p["dependencies"].as_array().unwrap() {
            let dep = d["name"].as_str().unwrap();
            if let Some(&theirs) = floor.get(dep) {
                if theirs >= mine {
                    wrong.push(format!("{name} (floor {mine}) depends on {dep} (floor {theirs}), not below it"));
                }
            }
        }
    }
    for name in floor.keys().filter(|n| !seen.contains(n)) {
        wrong.push(format!("{name} is drawn in docs/architecture.md but is no crate under host/"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
