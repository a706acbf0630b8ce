//! The conformance suites: Volcano's scenarios (from `../shared` beside the
//! repository; ignored by a plain `cargo test`) and tephra's own under
//! `tests/scenarios`.

use std::path::{Path, PathBuf};
use tephra::conformance::{run_file, run_scenario, Verdict};
use tephra::scheduler::Library;
use tephra::wasm::builtin::FIXTURES_DIR;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn library() -> Library {
    Library::load(Some(Path::new(FIXTURES_DIR))).expect("plugins load")
}

/// Scenarios of the shared file whose actions and plugins tephra has; they
/// must pass (a regression to "skipped" fails here too).
const MUST_PASS: [&str; 73] = [
    "doc-reclaim-weight-proportion",
    "doc-reclaim-deserved-capacity",
    "doc-capacity-user-guide-borrow-and-reclaim",
    "alloc-nodeselector-one-role-fails",
    "alloc-role-min-break",
    "alloc-one-job-two-pods",
    "alloc-big-task-does-not-block-other-queue",
    "alloc-fairshare-low-share-queue-first",
    "alloc-fairshare-queue-repushed-for-next-job",
    "enqueue-inqueue-stays-inqueue",
    "enqueue-running-untouched",
    "enqueue-missing-queue-ignored",
    "prop-enqueue-cpu-only-job-over-mem-deserved",
    "prop-enqueue-reject-over-realcapability",
    "prop-allocate-reject-over-deserved",
    "prop-queue-priority-order",
    "prop-enqueue-rejected-by-other-plugin-consumes-nothing",
    "cap-allocate-within-capability",
    "cap-reclaim-under-deserved",
    "cap-reclaim-scalar-only-request",
    "cap-reclaim-partial-dimension",
    "cap-no-reclaim-when-over-deserved-everywhere",
    "cap-reclaim-only-relevant-dimension",
    "cap-no-reclaim-scalar-only-deserved-queue",
    "cap-enqueue-cpu-only-job",
    "cap-enqueue-reject-over-capability",
    "hcap-leaf-queue-allocates",
    "hcap-two-pods-within-capability",
    "hcap-reclaim-sibling-first",
    "hcap-cpu-capability-inherited",
    "hcap-enqueue-ancestor-capability",
    "hcap-scalar-capability-inherited",
    "hcap-reclaim-single-scalar-dimension",
    "hcap-anc-l1-cross-parent-lowest-priority-victim",
    "hcap-anc-l1-sibling-victim-first",
    "hcap-anc-level0-leaf-check",
    "hcap-anc-level1-parent-over",
    "hcap-anc-level1-siblings-without-deserved",
    "hcap-anc-level2-unbalanced-depth2-not-over",
    "reclaim-two-queues-overused",
    "reclaim-victim-queue-priority",
    "reclaim-preemption-policy-never",
    "reclaim-closed-queue-capacity",
    "reclaim-counts-node-idle",
    "reclaim-no-eviction-when-idle-suffices",
    "preempt-not-needed-idle-enough",
    "preempt-one-task-of-lower-priority-job",
    "preempt-two-victims-for-large-task",
    "preempt-not-needed-when-allocatable",
    "preempt-skip-nonpreemptable-and-high-priority-pod",
    "preempt-besteffort-by-besteffort",
    "preempt-preemption-policy-never",
    "preempt-commit-only-winning-node",
    "preempt-multi-queue-preemptor-not-lost",
    "priority-plugin-preempt-enabled",
    "nodegroup-soft-subset-of-hard",
    "nodegroup-nonstrict-no-affinity",
    "nodegroup-affinity-inherited-from-parent",
    "nodegroup-queue-without-affinity-strict",
    "nodegroup-preferred-order",
    "nodegroup-limit-counts-running-usage",
    "nodegroup-limit-invalid-annotation",
    "binpack-weights-case1",
    "shuffle-evicts-victim-fn-selection",
    "backfill-besteffort-pick-order",
    "overcommit-huge-minresources-rejected",
    "e2e-reclaim-no-reclaim-when-overused",
    "e2e-capacity-reclaim-multi-queue",
    "e2e-hierarchical-capacity-all-fit",
    "e2e-guarantee-reserves-part-of-cluster",
    "e2e-allocate-without-enqueue-action",
    "e2e-gang-waits-for-non-volcano-pods",
    "e2e-preempt-only-same-queue",
];

/// How many cases `volcano-scenarios.yaml` holds: `./dev test` names this
/// number when the file is absent and the cases cannot run.
const VOLCANO_CASES: usize = 74;

/// Volcano's transcribed cases, from `../shared/conformance` beside the
/// repository. Ignored by a plain `cargo test`; `./dev test` runs it
/// wherever the file is, and says in its last lines that it did not run
/// where it is absent (and fails then under `CI=true`).
#[test]
#[ignore = "needs ../shared/conformance/volcano-scenarios.yaml beside the repository (./dev test runs it there)"]
fn volcano_scenarios() {
    let path = repo().join("../shared/conformance/volcano-scenarios.yaml");
    assert!(path.exists(), "{} is absent: put the shared folder beside the repository", path.display());
    let results = run_file(&path, &library()).unwrap();
    assert_eq!(results.len(), VOLCANO_CASES, "the shared file's case count changed: update VOLCANO_CASES");
    let failed: Vec<String> = results
        .iter()
        .filter_map(|o| match &o.verdict {
            Verdict::Fail(why) => Some(format!("{}: {why}", o.name)),
            _ => None,
        })
        .collect();
    assert!(failed.is_empty(), "failing scenarios:\n{}", failed.join("\n"));
    for name in MUST_PASS {
        let o = results.iter().find(|o| o.name == name).unwrap_or_else(|| panic!("no scenario {name}"));
        assert_eq!(o.verdict, Verdict::Pass, "{name}");
    }
    for o in &results {
        if let Verdict::Skip(why) = &o.verdict {
            assert!(
                why.contains("not built yet") || why.contains("historical") || why.contains("runner"),
                "{}: {why}",
                o.name
            );
        }
    }
}

#[test]
fn own_scenarios() {
    let lib = library();
    let dir = repo().join("tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        for o in run_file(&f, &lib).unwrap() {
            assert_eq!(o.verdict, Verdict::Pass, "{}: {}", f.display(), o.name);
        }
    }
}

/// The runner itself: a wrong expectation is reported as a failure with the
/// difference, and an unknown plugin as a skip.
#[test]
fn runner_reports_differences_and_skips() {
    let lib = library();
    let scenario = |expect: &str, plugin: &str| {
        let text = format!(
            r#"
name: t
actions: [allocate]
config_defaults: true
plugins: [[gang], [{plugin}]]
nodes: [{{name: n1, allocatable: {{cpu: '2', memory: 2Gi, pods: '10'}}}}]
queues: [{{name: q, weight: 1}}]
podgroups: [{{name: g, namespace: ns, queue: q, min_member: 1, phase: Inqueue}}]
pods: [{{name: p, namespace: ns, group: g, requests: {{cpu: '1'}}, phase: Pending}}]
expect: {expect}
"#
        );
        run_scenario(&yaml_serde::from_str(&text).unwrap(), &lib, "inline").verdict
    };
    assert_eq!(scenario("{binds: {ns/p: n1}}", "predicates"), Verdict::Pass);
    match scenario("{binds: {ns/p: n2}}", "predicates") {
        Verdict::Fail(why) => assert!(why.contains("binds: want"), "{why}"),
        other => panic!("expected a failure, got {other:?}"),
    }
    match scenario("{bind_count: 0}", "predicates") {
        Verdict::Fail(why) => assert!(why.contains("bind_count: want 0, got 1"), "{why}"),
        other => panic!("expected a failure, got {other:?}"),
    }
    match scenario("{bind_count: 1}", "no-such-plugin") {
        Verdict::Skip(why) => assert!(why.contains("no-such-plugin"), "{why}"),
        other => panic!("expected a skip, got {other:?}"),
    }
    match scenario("{node_temperature: 3}", "predicates") {
        Verdict::Skip(why) => assert!(why.contains("node_temperature"), "{why}"),
        other => panic!("expected a skip, got {other:?}"),
    }
    // The runner is strict about its own input: a count that is not a
    // number fails rather than checking nothing.
    match scenario("{bind_count: abc}", "predicates") {
        Verdict::Fail(why) => assert!(why.contains("expect.bind_count: abc is not an integer"), "{why}"),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// `tephra conformance` fails when no scenario ran (all skipped).
#[test]
fn a_run_that_only_skips_fails() {
    let dir = std::env::temp_dir().join(format!("tephra-skips-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("skips.yaml");
    std::fs::write(
        &f,
        "scenarios:\n- name: s\n  actions: [allocate]\n  plugins: [[no-such-plugin]]\n  nodes: []\n  expect: {bind_count: 0}\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tephra")).arg("conformance").arg(&f).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("0 passed, 0 failed, 1 skipped") && text.contains("FAIL: no scenario ran"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
