//! The `tephra` command end to end: the embedded demo, example manifests,
//! JSON output, and one-line errors for bad input.

use std::path::Path;
use std::process::Command;

fn tephra(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tephra"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn demo_runs_several_cycles_and_settles() {
    let (code, out, err) = tephra(&["simulate"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "── cycle 1 (t=0s) ──",
        "admitted   ml/train",
        "bind       ml/infer-server-0 → node-c",
        "phase      ml/train → Running",
        "arrived    podgroup ml/sweep",
        "completed  data/etl-step-0",
        "phase      ml/sweep → Completed",
        "settled after",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // The three-pod gang is bound in one cycle, never partially.
    let cycle2 = out.split("── cycle 2").nth(1).unwrap().split("── cycle 3").next().unwrap();
    assert_eq!(cycle2.matches("bind       ml/train-worker-").count(), 3, "{cycle2}");
    assert!(!err.contains("FAULT") && !out.contains("FAULT"));
}

#[test]
fn placement_example_honours_taints_selectors_and_affinity() {
    let (code, out, err) = tephra(&["simulate", "examples/placement/cluster.yaml"]);
    assert_eq!(code, 0, "{err}");
    for want in ["apps/web → cpu-2", "apps/batch → cpu-1", "apps/render → gpu-1", "apps/late → cpu-2"] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    assert!(!out.contains("apps/stray →"), "{out}");
    let stray = out.lines().find(|l| l.contains("waiting    apps/stray")).expect("stray waits with a reason");
    assert!(stray.contains("Insufficient cpu (resources)"), "{stray}");
    assert!(stray.contains("taint") && stray.contains("(predicates)"), "{stray}");
}

#[test]
fn json_output_is_machine_readable() {
    let (code, out, err) = tephra(&["simulate", "--output", "json", "examples/placement/cluster.yaml"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let binds: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["binds"].as_array().unwrap().iter().map(|b| b[0].as_str().unwrap().to_string()))
        .collect();
    assert!(binds.contains(&"apps/render".to_string()), "{binds:?}");
}

#[test]
fn bad_input_is_one_clear_line() {
    let dir = std::env::temp_dir().join(format!("tephra-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  containers:\n  - resources: {requests: {cpu: lots}}\n",
    )
    .unwrap();
    let (code, out, err) = tephra(&["simulate", file.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(out.is_empty(), "nothing is half applied: {out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.yaml: Pod ns/p: resources.requests.cpu: invalid quantity \"lots\""), "{err}");

    let conf = dir.join("conf.yaml");
    std::fs::write(&conf, "actions: \"enqueue, allocate, teleport\"\n").unwrap();
    let (code, _, err) = tephra(&["simulate", "--config", conf.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("conf.yaml: field actions: unknown action \"teleport\""), "{err}");
    let (code, _, err) = tephra(&["simulate", "no/such/file.yaml"]);
    assert_eq!(code, 2);
    assert!(err.contains("no/such/file.yaml"), "{err}");
}

#[test]
fn plugin_check_prints_points() {
    let wasm = Path::new(tephra::wasm::builtin::FIXTURES_DIR).join("test-rejecter.wasm");
    let (code, out, err) = tephra(&["plugin", "check", wasm.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("plugin \"test-rejecter\"") && out.contains("implements job-enqueueable"), "{out}");
}

#[test]
fn preemption_example_evicts_restarts_and_recovers() {
    let (code, out, err) = tephra(&["simulate", "examples/preemption/cluster.yaml"]);
    assert_eq!(code, 0, "{err}");
    let evict = out
        .lines()
        .find(|l| l.contains("evict      team/batch-worker-"))
        .unwrap_or_else(|| panic!("no eviction:\n{out}"));
    assert!(evict.contains("preempt: for team/urgent-fix-0"), "{evict}");
    assert!(evict.contains("victims voted by priority, conformance"), "{evict}");
    assert_eq!(out.matches("evict      ").count(), 1, "exactly one victim:\n{out}");
    let victim = evict.split_whitespace().nth(1).unwrap();
    assert!(out.contains(&format!("restarted  {victim} (recreated by its job)")), "{out}");
    // The urgent pod is pipelined on the victim's node, then bound there.
    let node = evict.split(" on ").nth(1).unwrap().split(':').next().unwrap();
    assert!(out.contains(&format!("pipelined  team/urgent-fix-0 → {node}")), "{out}");
    assert!(out.contains(&format!("bind       team/urgent-fix-0 → {node}")), "{out}");
    // After the urgent job completes, the recreated pod runs again.
    let after = out.split("completed  team/urgent-fix-0").nth(1).expect("urgent completes");
    assert!(after.contains(&format!("bind       {victim} → {node}")), "{after}");
    assert!(out.contains("settled after"), "{out}");
}
