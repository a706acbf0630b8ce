//! The generated files match `wit/`, and the contract's version matches its changes.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn generated_files_are_fresh() {
    let root = root();
    let files = tephra_codegen::generate(&root).unwrap();
    let stale = tephra_codegen::stale(&root, &files);
    assert!(stale.is_empty(), "stale generated files {stale:?}; run: cargo run -p tephra-codegen");
}

#[test]
fn the_contract_changes_only_as_its_version_allows() {
    let verdict = tephra_codegen::compat::check(&root().join("wit"));
    assert!(verdict.is_ok(), "{:#}", verdict.unwrap_err());
}

/// A copy of `wit/` in a fresh directory, the current contract edited by `edit`.
fn edited(name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tephra-codegen-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy(&root().join("wit"), &dir);
    let main = dir.join("scheduler.wit");
    std::fs::write(&main, edit(std::fs::read_to_string(&main).unwrap())).unwrap();
    dir
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

fn version(text: String, v: &str) -> String {
    let line = text.lines().find(|l| l.starts_with("package ")).unwrap().to_string();
    text.replacen(&line, &format!("package tephra:scheduler@{v};"), 1)
}

/// A snapshot column added after `task-subgroup`.
fn new_column(text: String) -> String {
    text.replacen(
        "        task-subgroup: list<u32>,\n",
        "        task-subgroup: list<u32>,\n        task-cost: list<f64>,\n",
        1,
    )
}

/// A new extension point.
fn new_point(text: String) -> String {
    text.replacen(
        "interface queue-status {",
        "interface victim-cost {\n    victim-cost: func(tasks: list<u32>) -> list<f64>;\n}\n\ninterface queue-status {",
        1,
    )
    .replacen("    export evictable;\n}", "    export evictable;\n    export victim-cost;\n}", 1)
}

fn verdict(dir: &Path) -> Result<tephra_codegen::compat::Verdict, String> {
    let v = tephra_codegen::compat::check(dir).map_err(|e| format!("{e:#}"));
    let _ = std::fs::remove_dir_all(dir);
    v
}

#[test]
fn a_changed_contract_needs_a_new_version() {
    use tephra_codegen::compat::Verdict;
    // Docs alone may change.
    let docs = edited("docs", |t| t.replacen("/// Volcano's vote", "/// The vote of Volcano", 1));
    assert!(matches!(verdict(&docs), Ok(Verdict::Unchanged(_))));
    // A column or a point under the released version is refused.
    let err = verdict(&edited("column", new_column)).unwrap_err();
    assert!(err.contains("changed since its release; bump the version"), "{err}");
    let err = verdict(&edited("point", new_point)).unwrap_err();
    assert!(err.contains("other points than as released"), "{err}");
    // A new point is a compatible bump; a new column is not.
    let point = verdict(&edited("point-bumped", |t| new_point(version(t, "0.7.1"))));
    assert!(matches!(point, Ok(Verdict::Compatible { .. })), "{point:?}");
    let err = verdict(&edited("column-bumped", |t| new_column(version(t, "0.7.1")))).unwrap_err();
    assert!(err.contains("make the version 0.8.0"), "{err}");
    // A breaking bump allows both; going back is refused.
    let breaking = edited("breaking", |t| new_column(new_point(version(t, "0.8.0"))));
    assert!(matches!(verdict(&breaking), Ok(Verdict::Breaking { .. })));
    let err = verdict(&edited("older", |t| version(t, "0.6.1"))).unwrap_err();
    assert!(err.contains("older than the last released contract 0.7.0"), "{err}");
}
