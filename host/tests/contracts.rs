//! Plugins built against earlier contracts keep working: the default
//! plugins as built for contract 0.4.0 (at e617912^), 0.5.0 (at 5ed49de) and
//! 0.6.0 (at 1ccbccc),
//! kept as components under `tests/contracts/<version>/`, load with the
//! points they declared and schedule as they did.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use tephra::conformance::{run_file, Verdict};
use tephra::plugin::Backend;
use tephra::scheduler::Library;
use tephra::wasm::builtin::FIXTURES_DIR;

const EARLIER: [&str; 3] = ["0.4.0", "0.5.0", "0.6.0"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn components(version: &str) -> Vec<PathBuf> {
    let dir = repo().join("tests/contracts").join(version);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 13, "{}: the 13 default plugins", dir.display());
    files
}

/// The test fixtures and the default plugins as built for `version`.
fn library(version: &str) -> Library {
    let mut lib = Library::load(Some(Path::new(FIXTURES_DIR))).unwrap();
    for f in components(version) {
        let name = lib.load_file(&f).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(lib.get(&name).unwrap().info().contract, version, "{}", f.display());
    }
    lib
}

/// Points a default plugin gained and lost since it was built for
/// `version`, and why.
fn changed_since(version: &str, name: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match (version, name) {
        // Session 16: targets are voted first in enqueue; no Permit of its own.
        ("0.4.0", "reservation") => (&[], &["job-enqueueable"]),
        // Session 17: hierarchical DRF orders queues and reclaims.
        ("0.4.0" | "0.5.0", "drf") => (&["queue-order", "reclaimable"], &[]),
        // Contract 0.7.0: gang eviction asks who may be evicted.
        (_, "gang" | "priority" | "conformance" | "capacity") => (&["evictable"], &[]),
        _ => (&[], &[]),
    }
}

#[test]
fn earlier_contracts_load_with_the_points_they_declared() {
    let current = Library::load(None).unwrap();
    let names = |p: &dyn Backend| {
        let mut v: Vec<&str> = p.info().points.iter().map(|&x| tephra::contract::point_name(x)).collect();
        v.sort();
        v
    };
    for v in EARLIER {
        let lib = library(v);
        for f in components(v) {
            let name = f.file_stem().unwrap().to_str().unwrap();
            let old = lib.get(name).unwrap();
            assert!(old.origin().ends_with(&format!("{name}.wasm")), "{name}: {}", old.origin());
            let (added, dropped) = changed_since(v, name);
            let mut want = names(current.get(name).unwrap());
            want.retain(|p| !added.contains(p));
            want.extend(dropped);
            want.sort();
            assert_eq!(names(old), want, "{v} {name}");
        }
    }
}

/// `tephra simulate` output with the default plugins, or with those of an
/// earlier contract.
fn simulate(args: &[&str], version: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tephra"));
    cmd.current_dir(repo()).arg("simulate").args(args);
    if let Some(v) = version {
        cmd.arg("--plugins-dir").arg(format!("tests/contracts/{v}"));
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn earlier_contracts_schedule_the_examples_alike() {
    let examples: [&[&str]; 7] = [
        &[],
        &["examples/preemption/cluster.yaml"],
        &["examples/placement/cluster.yaml"],
        &["examples/nodegroup/case1.yaml"],
        &["examples/nodegroup/case2.yaml"],
        &["examples/shadow/cluster.yaml"],
        &["examples/reservation/big-job.yaml", "--config", "examples/reservation/big-job.conf"],
    ];
    for args in examples {
        let now = simulate(args, None);
        assert!(now.contains("bind "), "{args:?} binds nothing:\n{now}");
        for v in EARLIER {
            // Big-job reservation changed after 0.4.0 (see `newer_than`).
            if v == "0.4.0" && args.contains(&"examples/reservation/big-job.conf") {
                continue;
            }
            // A refusal's wording (the plugin's own reason, `why`) came after
            // the frozen builds; what is decided must not differ.
            let decided = |out: &str| -> String {
                out.lines().map(|l| l.split(" not admitted: ").next().unwrap_or(l)).collect::<Vec<_>>().join("\n")
            };
            let (now, old) = (decided(&now), decided(&simulate(args, Some(v))));
            let first = now.lines().zip(old.lines()).position(|(a, b)| a != b);
            assert!(old == now, "{v}: {args:?} differs from line {first:?} on:\n{old}");
        }
    }
}

/// Verdict per scenario of `files`.
fn verdicts(lib: &Library, files: &[PathBuf]) -> BTreeMap<String, Verdict> {
    let mut out = BTreeMap::new();
    for f in files {
        for r in run_file(f, lib).unwrap() {
            out.insert(format!("{}: {}", f.file_name().unwrap().to_string_lossy(), r.name), r.verdict);
        }
    }
    out
}

/// Scenarios an earlier contract's plugins cannot pass, and why: the
/// placement rules came with 0.5.0 (a 0.4.0 snapshot has no pod labels,
/// terms, spread, ports, images or volumes: its plugins never see them), and
/// big-job reservation changed in session 16 (targets voted first, capped
/// locks, targets beyond their queue's capability refused), and drf learned
/// hierarchical DRF in session 17; contract 0.7.0 brought the topology
/// (gang's subgroups, the `evictable` point of gang, priority and
/// conformance that gang eviction asks); the quota plugins' refusal reasons
/// (`why`) came with session 20, after 0.7.0's frozen builds; the
/// `predicates` plugin's check of DRA device classes after them (issue 46).
fn newer_than(version: &str, scenario: &str) -> bool {
    scenario.starts_with("topology.yaml") || scenario.starts_with("gang-eviction.yaml")
        || scenario.starts_with("reasons.yaml")
        || scenario.starts_with("placement-devices.yaml") || scenario.starts_with("devices.yaml")
        || scenario == "reservation.yaml: big-job-target-is-admitted-only-within-its-quota-and-holds-its-queue"
    // Session 17: hierarchical DRF.
        || version != "0.6.0" && scenario.starts_with("hdrf.yaml")
        || version == "0.4.0"
            && (scenario.starts_with("placement")
                || [
                    "reservation.yaml: big-job-above-the-line-most-is-preferred",
                    "reservation.yaml: big-job-beyond-its-queue-capability-is-not-reserved-for",
                    "reservation.yaml: big-job-locks-are-capped",
                    "reservation.yaml: big-job-target-is-admitted-only-within-its-quota-and-holds-its-queue",
                ]
                .contains(&scenario))
}

/// Every scenario of tephra's own gets the verdict the current default
/// plugins get, but for what came after the version.
#[test]
fn earlier_contracts_give_the_same_verdicts_on_the_scenarios() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    same_verdicts(&files, 150);
}

/// The same for Volcano's transcribed cases (see conformance.rs).
#[test]
#[ignore = "needs ../shared/conformance/volcano-scenarios.yaml beside the repository (./dev test runs it there)"]
fn volcano_scenarios_alike_on_earlier_contracts() {
    let volcano = repo().join("../shared/conformance/volcano-scenarios.yaml");
    assert!(volcano.exists(), "{} is absent: put the shared folder beside the repository", volcano.display());
    same_verdicts(&[volcano], 60);
}

/// Each earlier contract gives the verdicts of the current one on `files`,
/// of which more than `passing` pass.
fn same_verdicts(files: &[PathBuf], passing: usize) {
    let now = verdicts(&Library::load(Some(Path::new(FIXTURES_DIR))).unwrap(), files);
    assert!(now.values().filter(|v| **v == Verdict::Pass).count() > passing, "{now:?}");
    for v in EARLIER {
        let old = verdicts(&library(v), files);
        let differ: Vec<String> = now
            .iter()
            .filter(|(k, want)| old.get(*k) != Some(want) && !newer_than(v, k))
            .map(|(k, want)| format!("{k}: now {want:?}, {v} {:?}", old.get(k)))
            .collect();
        assert!(differ.is_empty(), "{v}: {} of {} scenarios differ:\n{}", differ.len(), now.len(), differ.join("\n"));
        let exempt = now.keys().filter(|k| newer_than(v, k)).count();
        eprintln!("{v}: {} scenarios alike, {exempt} newer than it", now.len() - exempt);
    }
}
