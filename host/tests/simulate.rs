//! The `tephra` command end to end: the embedded demo, example manifests,
//! JSON output, one-line errors for bad input, and sessions kept between cycles.

use std::collections::BTreeMap;
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

/// Hierarchical DRF on Volcano's example/hierarchical-jobs: the cycle that
/// places pods splits them by the queue tree's weights; without the switch,
/// drf leaves queue order to the queues' names.
#[test]
fn hierarchical_drf_example_splits_by_the_tree() {
    let split = |out: &str| {
        let cycle2 = out.split("── cycle 2").nth(1).unwrap().split("── cycle 3").next().unwrap();
        ["eng-prod", "eng-dev", "sci-prod", "sci-dev"]
            .map(|j| cycle2.matches(&format!("bind       default/{j}-job-")).count())
    };
    let (code, out, err) = tephra(&["simulate", "examples/hierarchical-drf/cluster.yaml", "--cycles", "3"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(split(&out), [1, 0, 5, 2], "{out}");
    let flat = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/hierarchical-drf/cluster.yaml"),
    )
    .unwrap()
    .replace("        enableHierarchy: true\n", "");
    let path = std::env::temp_dir().join(format!("tephra-flat-drf-{}.yaml", std::process::id()));
    std::fs::write(&path, flat).unwrap();
    let (code, out, err) = tephra(&["simulate", path.to_str().unwrap(), "--cycles", "3"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 0, "{err}");
    assert_eq!(split(&out), [6, 2, 0, 0], "{out}");
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

/// The placement walkthrough: anti-affinity, affinity, host ports, spread
/// and matchFields hold under the default (binpacking) config, and the pods
/// they turn away wait with kube-scheduler's reasons.
#[test]
fn placement_rules_hold_and_name_why_pods_wait() {
    let (code, out, err) = tephra(&["simulate", "examples/placement/rules.yaml"]);
    assert_eq!(code, 0, "{err}");
    let node_of = |pod: &str| {
        let line = out.lines().find(|l| l.contains(&format!("bind       apps/{pod} → ")))?;
        line.split(" → ").nth(1).map(|n| n.split_whitespace().next().unwrap_or_default().to_string())
    };
    let webs: Vec<Option<String>> = (0..4).map(|i| node_of(&format!("web-{i}"))).collect();
    let mut placed: Vec<String> = webs.iter().flatten().cloned().collect();
    placed.sort();
    assert_eq!(placed, ["n0", "n1", "n2"], "one web pod per node: {webs:?}\n{out}");
    let waiting = |pod: &str| out.lines().find(|l| l.contains(&format!("waiting    apps/{pod}:"))).map(str::to_string);
    let web_waits = (0..4).filter_map(|i| waiting(&format!("web-{i}"))).collect::<Vec<_>>();
    assert_eq!(web_waits.len(), 1, "{out}");
    assert!(web_waits[0].contains("node(s) didn't match pod anti-affinity rules (predicates)"), "{}", web_waits[0]);
    assert_eq!(node_of("near-db").as_deref(), Some("n2"), "{out}");
    assert_eq!(node_of("pinned").as_deref(), Some("n1"), "{out}");
    assert_eq!(node_of("with-volume").as_deref(), Some("n0"), "the claim's volume is on n0:\n{out}");
    let ports = [node_of("port-a"), node_of("port-b")];
    assert_eq!(ports.iter().flatten().collect::<Vec<_>>(), [&"n0".to_string()], "{out}");
    let port_wait = waiting("port-a").or_else(|| waiting("port-b")).expect("a port pod waits");
    assert!(port_wait.contains("node(s) didn't have free ports for the requested pod ports"), "{port_wait}");
    let mut zones = std::collections::BTreeMap::new();
    for i in 0..6 {
        let node = node_of(&format!("zoned-{i}")).unwrap_or_else(|| panic!("zoned-{i} placed:\n{out}"));
        *zones.entry(node).or_insert(0) += 1;
    }
    assert_eq!(zones.values().copied().collect::<Vec<_>>(), [2, 2, 2], "{zones:?}");
    assert!(!err.contains("FAULT") && !out.contains("FAULT"));
}

/// A rule tephra does not evaluate yet keeps its pod waiting, with a reason
/// naming the field; a plain pod beside it is placed.
#[test]
fn unevaluated_rules_wait_and_are_named() {
    let (code, out, err) = tephra(&["simulate", "examples/placement/not-yet.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("bind       apps/plain → "), "{out}");
    assert!(!out.contains("apps/gated →"), "gated was placed:\n{out}");
    let line = out.lines().find(|l| l.contains("waiting    apps/gated:")).expect("a reason");
    assert!(line.contains("spec.schedulingGates not evaluated by tephra yet (tephra)"), "{line}");
}

/// examples/placement/volumes.yaml as its README says: the StatefulSet's
/// claims get the two local volumes large enough (one pod on each of their
/// nodes), the notebook's claim is provisioned where its class allows, the
/// Immediate claim and the claim no volume fits wait with kube-scheduler's
/// words.
#[test]
fn placement_volumes_walkthrough() {
    let (code, out, err) = tephra(&["simulate", "examples/placement/volumes.yaml"]);
    assert_eq!(code, 0, "{err}");
    for line in [
        "created    PersistentVolumeClaim apps/data-db-0 (by StatefulSet apps/db)",
        "created    PersistentVolumeClaim apps/data-db-1 (by StatefulSet apps/db)",
        "volume     claim apps/data-db-0 bound to local-n0",
        "bind       apps/db-0 → n0",
        "volume     claim apps/data-db-1 bound to local-n1",
        "bind       apps/db-1 → n1",
    ] {
        assert!(out.contains(line), "{line:?} missing:\n{out}");
    }
    for line in [
        "created    PersistentVolumeClaim apps/scratchy-scratch (for pod apps/scratchy)",
        "volume     claim apps/scratchy-scratch bound to local-n1-small",
        "bind       apps/scratchy → n1",
    ] {
        assert!(out.contains(line), "{line:?} missing:\n{out}");
    }
    assert!(!out.contains("apps/db-0 → n2") && !out.contains("apps/db-1 → n2"), "n2 has no volume:\n{out}");
    let notebook = out.lines().find(|l| l.contains("bind       apps/notebook → ")).expect("notebook placed");
    let node = notebook.rsplit(' ').next().unwrap();
    assert!(["n1", "n2"].contains(&node), "zones b and c only: {notebook}");
    assert!(out.contains(&format!("volume     claim apps/workspace provisioned on {node}")), "{out}");
    for (pod, why) in [
        ("archiver", "pod has unbound immediate PersistentVolumeClaims"),
        ("greedy", "node(s) didn't find available persistent volumes to bind"),
    ] {
        assert!(!out.contains(&format!("apps/{pod} →")), "{pod} was placed:\n{out}");
        let line = out.lines().rfind(|l| l.contains(&format!("waiting    apps/{pod}:"))).expect("a reason");
        assert!(line.ends_with(&format!("0/3 nodes are available: 3 {why} (tephra)")), "{line}");
    }
}

/// examples/placement/devices.yaml as its README says: each pod's claim is
/// made from its template; the gang's workers get two A100s of one NVLink
/// domain each (two on n0, one per domain; two on n1), the T4 claim goes to
/// n2; a failing selector and a full queue keep their pods waiting.
#[test]
fn placement_devices_walkthrough() {
    let (code, out, err) = tephra(&["simulate", "examples/placement/devices.yaml"]);
    assert_eq!(code, 0, "{err}");
    for i in 0..4 {
        let made = format!("created    ResourceClaim ml/train-{i}-gpus (for pod ml/train-{i})");
        assert!(out.contains(&made), "{made:?} missing:\n{out}");
    }
    let mut per_node = BTreeMap::new();
    for i in 0..4 {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("devices    claim ml/train-{i}-gpus allocated ")))
            .unwrap_or_else(|| panic!("train-{i} got no devices:\n{out}"));
        let got: Vec<&str> = line.rsplit("allocated ").next().unwrap().split(", ").collect();
        assert_eq!(got.len(), 2, "{line}");
        let node = got[0].split('/').next().unwrap();
        assert!(got.iter().all(|d| d.starts_with(&format!("{node}/"))), "one node: {line}");
        assert!(out.contains(&format!("bind       ml/train-{i} → {node}")), "placed where its devices are:\n{out}");
        // n0's domains are gpu-0/2 and gpu-1/3; n1's four share one.
        if node == "n0" {
            let domain = |d: &str| d.ends_with('0') || d.ends_with('2');
            assert_eq!(domain(got[0]), domain(got[1]), "one NVLink domain: {line}");
        }
        *per_node.entry(node.to_string()).or_insert(0) += 1;
    }
    assert_eq!(per_node, BTreeMap::from([("n0".to_string(), 2), ("n1".to_string(), 2)]));
    assert!(out.contains("devices    claim ml/eval-gpu allocated n2/gpu-"), "{out}");
    assert!(out.contains("bind       ml/eval → n2"), "{out}");
    for (pod, why) in [
        ("probe", r#"selector "device.attributes[\"gpu.example.com\"].cores > 2" fails: No such key: cores"#),
        ("extra", "queue research has no quota left for it"),
    ] {
        assert!(!out.contains(&format!("ml/{pod} →")), "{pod} was placed:\n{out}");
        let line = out.lines().rfind(|l| l.contains(&format!("waiting    ml/{pod}:"))).expect("a reason");
        assert!(line.contains(why), "{line}");
    }
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
    // No writes in flight would mean no bind ever sent.
    let (code, _, err) = tephra(&["run", "--bind-concurrency", "0"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value '0' for '--bind-concurrency"), "{err}");
}

#[test]
fn plugin_check_prints_points() {
    let wasm = Path::new(tephra::wasm::builtin::FIXTURES_DIR).join("test-rejecter.wasm");
    let (code, out, err) = tephra(&["plugin", "check", wasm.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("plugin \"test-rejecter\"") && out.contains("implements job-enqueueable"), "{out}");
}

/// `plugin test` holds a component to the cluster's call deadline: `faulty`
/// spinning 300 ms as a session opens passes its case under the default 2 s
/// and fails it, naming the fault, under 100 ms; `--json` reports the cases.
#[test]
fn plugin_test_fails_a_plugin_too_slow_for_the_call_deadline() {
    let dir = std::env::temp_dir().join(format!("tephra-plugin-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = dir.join("slow.yaml");
    std::fs::write(
        &cases,
        "scenarios:\n- name: slow-but-right\n  actions: [allocate]\n  config_defaults: true\n  plugins:\n  - [gang]\n  \
         - [predicates, faulty]\n  plugin_args:\n    faulty: {mode: slow}\n  nodes:\n  - {name: n1, allocatable: \
         {cpu: '4', memory: 8Gi, pods: '10'}}\n  queues:\n  - {name: default}\n  podgroups:\n  - {name: a, namespace: \
         ns, queue: default, min_member: 1, phase: Inqueue}\n  pods:\n  - {name: a-0, namespace: ns, group: a, \
         requests: {cpu: '1'}, phase: Pending}\n  expect:\n    binds: {ns/a-0: n1}\n",
    )
    .unwrap();
    let wasm = Path::new(tephra::wasm::builtin::FIXTURES_DIR).join("faulty.wasm");
    let (wasm, cases) = (wasm.to_str().unwrap(), cases.to_str().unwrap());
    let (code, out, err) = tephra(&["plugin", "test", wasm, cases]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("pass  slow-but-right"), "{out}");
    let (code, out, _) = tephra(&["plugin", "test", wasm, cases, "--call-deadline-ms", "100"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("FAIL  slow-but-right") && out.contains("fault: faulty open-session"), "{out}");
    let (code, out, _) = tephra(&["plugin", "test", wasm, cases, "--call-deadline-ms", "100", "--json"]);
    assert_eq!(code, 1, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (report["plugin"].as_str(), report["ok"].as_bool(), report["failed"].as_u64()),
        (Some("faulty"), Some(false), Some(1))
    );
    assert_eq!(report["call_deadline_ms"], 100);
    let case = &report["cases"][0];
    assert_eq!((case["name"].as_str(), case["verdict"].as_str()), (Some("slow-but-right"), Some("fail")), "{out}");
    assert!(case["detail"].as_str().unwrap().contains("fault: faulty open-session"), "{out}");
    assert!(case["millis"].as_f64().unwrap() > 0.0, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `plugin componentize` takes a core module of the world it names and says
/// in one line what else it got; nothing is written then.
#[test]
fn plugin_componentize_refuses_what_is_not_a_module_of_its_world() {
    let out = std::env::temp_dir().join(format!("tephra-componentize-{}.wasm", std::process::id()));
    let component = Path::new(tephra::wasm::builtin::FIXTURES_DIR).join("test-rejecter.wasm");
    let empty_module = std::env::temp_dir().join(format!("tephra-componentize-{}-core.wasm", std::process::id()));
    std::fs::write(&empty_module, b"\0asm\x01\0\0\0").unwrap();
    let run = |file: &Path, world: &str| {
        tephra(&[
            "plugin",
            "componentize",
            file.to_str().unwrap(),
            "--wit",
            "wit",
            "--world",
            world,
            "-o",
            out.to_str().unwrap(),
        ])
    };
    let (code, _, err) = run(&component, "plugin");
    assert_eq!(code, 2);
    assert!(err.contains("test-rejecter.wasm: not a core WebAssembly module"), "{err}");
    let (code, _, err) = run(Path::new("README.md"), "plugin");
    assert!(code == 2 && err.contains("README.md: not a core WebAssembly module"), "{err}");
    let (code, _, err) = run(&empty_module, "nope");
    assert!(code == 2 && err.contains("World `nope` not found"), "{err}");
    // A module exporting nothing is not a plugin.
    let (code, _, err) = run(&empty_module, "plugin");
    assert!(code == 2 && err.contains("not a module of world plugin"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!out.exists());
    let _ = std::fs::remove_file(&empty_module);
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

/// The seed's 4-step queue walk-through, for both quota plugins: job2 is
/// reclaimed, job1 keeps running, job3 runs, job2 waits (recreated, pending).
#[test]
fn reclaim_walkthrough_for_both_quota_plugins() {
    for plugin in ["proportion", "capacity"] {
        let file = format!("examples/reclaim-walkthrough/{plugin}/cluster.yaml");
        let (code, out, err) = tephra(&["simulate", &file]);
        assert_eq!(code, 0, "{plugin}: {err}");
        assert!(!err.contains("not available"), "{plugin}: {err}");
        let evictions: Vec<&str> = out.lines().filter(|l| l.contains("evict      ")).collect();
        assert_eq!(evictions.len(), 1, "{plugin}: {out}");
        assert!(
            evictions[0].contains("default/job2-default0-0 on n1: reclaim: for default/job3-default0-0"),
            "{plugin}: {}",
            evictions[0]
        );
        // Reclaim happens only after queue test and job3 arrive.
        let before = out.split("arrived    podgroup default/job3").next().unwrap();
        assert!(before.contains("bind       default/job1-default0-0 → n1"), "{plugin}: {out}");
        assert!(before.contains("bind       default/job2-default0-0 → n1"), "{plugin}: {out}");
        assert!(!before.contains("evict"), "{plugin}: {out}");
        assert!(out.contains("bind       default/job3-default0-0 → n1"), "{plugin}: {out}");
        assert!(out.contains("restarted  default/job2-default0-0"), "{plugin}: {out}");
        assert_eq!(out.matches("bind       default/job1-default0-0").count(), 1, "{plugin}: job1 is never touched");
        assert_eq!(out.matches("bind       default/job2-default0-0").count(), 1, "{plugin}: job2 stays pending");
        let last = out.rsplit("── cycle").next().unwrap();
        assert!(last.contains("waiting    default/job2-default0-0"), "{plugin}: {last}");
        assert!(out.contains("settled after"), "{plugin}: {out}");
    }
}

/// Seed 003, case 1: nlp prefers nodegroup1 and spills to nodegroup2;
/// recommend only ever uses nodegroup2; its oversized capability is warned about.
#[test]
fn nodegroup_case1() {
    let (code, out, err) = tephra(&["simulate", "examples/nodegroup/case1.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("bind       ai/nlp-train-w-0 → ng1-"), "{out}");
    assert!(out.contains("bind       ai/nlp-train-w-1 → ng1-"), "{out}");
    assert!(out.contains("bind       ai/rec-a-w-0 → ng2-"), "{out}");
    assert!(out.contains("bind       ai/nlp-extra-w-0 → ng2-"), "nodegroup1 full, nlp uses nodegroup2:\n{out}");
    assert!(!out.contains("bind       ai/rec-b-w-0"), "recommend never uses nodegroup1:\n{out}");
    let last = out.rsplit("── cycle").next().unwrap();
    assert!(last.contains("waiting    ai/rec-b-w-0") && last.contains("nodegroup \"nodegroup1\""), "{last}");
    assert_eq!(err.matches("queue recommend: capability exceeds").count(), 1, "warned once: {err}");
    assert!(err.contains("cpu 12000m > 8000m"), "{err}");
}

/// Seed 003, case 2: tts only on the private cloud, recommend on either.
#[test]
fn nodegroup_case2() {
    let (code, out, err) = tephra(&["simulate", "examples/nodegroup/case2.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("bind       ai/tts-long-w-0 → private-"), "{out}");
    assert!(out.contains("bind       ai/tts-long-w-1 → private-"), "{out}");
    assert!(out.contains("bind       ai/rec-a-w-0 → public-"), "{out}");
    let waiting = out.lines().find(|l| l.contains("waiting    ai/tts-more-w-0")).expect("tts-more waits");
    assert!(waiting.contains("nodegroup \"public\""), "a free public node is refused: {waiting}");
    let after = out.split("completed  ai/tts-long-w-1").nth(1).expect("tts-long completes");
    assert!(after.contains("bind       ai/tts-more-w-0 → private-"), "{after}");
}

/// Cycles in which only statuses changed start from the last session (and,
/// in this debug build, each such session is checked against a full build
/// of the same cluster); arrivals make full builds.
#[test]
fn demo_sessions_start_from_the_last_one() {
    use tephra::{config::SchedulerConfig, manifest, scheduler::Library, scheduler::Scheduler, simulate};
    let read = |f: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(f)).unwrap();
    let objects = manifest::parse(&read("examples/demo/cluster.yaml"), "demo").unwrap();
    let config = SchedulerConfig::parse(&read("examples/scheduler.yaml"), "config").unwrap();
    let lib = Library::load(None).unwrap();
    let options = simulate::Options { max_cycles: 30, period: 1.0, ..Default::default() };
    let mut sim = simulate::Simulation::new(objects, Scheduler::new(config, &lib), options);
    let mut binds = 0;
    for _ in 0..30 {
        binds += sim.step().binds.len();
    }
    let opens = sim.scheduler.sessions.opens;
    assert!(binds > 0);
    assert!(opens.full >= 1 && opens.updated >= 10, "{opens:?}");
    assert_eq!(opens.full + opens.updated, 30);
}

/// Hostile input is refused in one line naming file, object and field —
/// never wrapped, half applied or silently dropped (issue 29's findings).
#[test]
fn hostile_input_is_refused_or_reported() {
    let dir = std::env::temp_dir().join(format!("tephra-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}\n---\n";
    let pod = |name: &str, ann: &str, cpu: &str| {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns, annotations: {{{ann}}}}}\nspec:\n  containers: [{{name: c, image: x, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]\n---\n")
    };
    let job = |spec: &str| {
        format!("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: j, namespace: ns}}\nspec:\n{spec}\n  tasks:\n  - name: t\n    replicas: 2\n    template: {{spec: {{containers: [{{name: c, image: x}}]}}}}\n")
    };
    let refused = [
        (
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: ns}\nspec: {minMember: 4294967297}\n".to_string(),
            "PodGroup ns/g: spec.minMember: 4294967297 is out of the int32 range",
        ),
        (job("  minAvailable: -1"), "Job ns/j: spec.minAvailable: -1 is negative"),
        (
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: big}\nvalue: 3000000000\n".to_string(),
            "PriorityClass big: value: 3000000000 is out of the int32 range",
        ),
        (pod("neg", "", "-1"), "Pod ns/neg: resources.requests.cpu: \"-1\" is negative"),
        (pod("huge", "", "1e300Ei"), "Pod ns/huge: resources.requests.cpu: invalid quantity \"1e300Ei\""),
        (
            job("  minAvailable: 1").replace("replicas: 2", "replicas: 2000000"),
            "Job ns/j task t: replicas: the job's tasks add up to more than 1000000 pods",
        ),
        (format!("{node}{}", node.trim_end_matches("---\n")), "Node n1: defined twice (earlier in the same file)"),
    ];
    for (i, (text, want)) in refused.iter().enumerate() {
        let f = dir.join(format!("in{i}.yaml"));
        std::fs::write(&f, text).unwrap();
        let (code, out, err) = tephra(&["simulate", f.to_str().unwrap()]);
        assert_eq!((code, out.as_str()), (2, ""), "{want}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("in{i}.yaml: {want}")), "want {want:?}, got {err}");
    }
    // The same object in two files at once is named with both.
    let (a, b) = (dir.join("a.yaml"), dir.join("b.yaml"));
    std::fs::write(&a, node).unwrap();
    std::fs::write(&b, node).unwrap();
    let (code, _, err) = tephra(&["simulate", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("b.yaml: Node n1: defined twice (also in ") && err.contains("a.yaml)"), "{err}");
    // Objects that point at nothing wait with the reason, in the report.
    let f = dir.join("dangling.yaml");
    let text = format!(
        "{node}{}{}",
        pod("p3", "scheduling.k8s.io/group-name: nogroup", "1"),
        pod("p4", "scheduling.volcano.sh/queue-name: noqueue", "1")
    );
    std::fs::write(&f, text.replace("containers:", "schedulerName: volcano\n  containers:")).unwrap();
    let (code, out, err) = tephra(&["simulate", f.to_str().unwrap(), "--cycles", "2"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("waiting    ns/p3: its PodGroup ns/nogroup does not exist"), "{out}");
    assert!(out.contains("waiting    ns/podgroup-p4: its queue \"noqueue\" does not exist"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Durations are checked before use: no panic on NaN, negative, infinite
/// or past-u64 periods.
#[test]
fn bad_periods_are_refused_before_use() {
    for p in ["NaN", "-1", "inf", "0"] {
        let (code, _, err) = tephra(&["simulate", "--realtime", &format!("--period={p}"), "--cycles", "1"]);
        assert_eq!(code, 2, "{p}: {err}");
        assert!(err.contains("is not a number of seconds above 0"), "{p}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let (code, _, err) = tephra(&["run", "--period", "18446744073709551616s"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not a duration of at most a year"), "{err}");
}

/// A file that is not a regular one is refused at once: a FIFO would hang
/// start-up, `/dev/zero` would be read for ever.
#[test]
fn inputs_that_are_not_regular_files_are_refused() {
    let (code, _, err) = tephra(&["simulate", "/dev/zero"]);
    assert_eq!(code, 2);
    assert!(err.contains("/dev/zero: not a regular file"), "{err}");
    let fifo = std::env::temp_dir().join(format!("tephra-fifo-cli-{}", std::process::id()));
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_tephra"))
        .args(["simulate", "--config"])
        .arg(&fifo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    // Not a timing check: a hang is killed so that the test fails instead.
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = std::fs::remove_file(&fifo);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(2), "a FIFO hung start-up: {err}");
    assert!(err.contains("not a regular file"), "{err}");
}

/// The topology walkthrough: the training job's partitions each get a rack
/// of one spine, the notebook packs into the used rack, the small job takes
/// the free rack, and the late one waits for a rack though the cluster has
/// room; without its networkTopology it runs across racks.
#[test]
fn topology_example_places_partitions_and_keeps_racks_whole() {
    let (code, out, err) = tephra(&["simulate", "examples/topology/cluster.yaml"]);
    assert_eq!(code, 0, "{err}");
    for want in [
        "domain     ml/llm-train (subgroup of ml/llm-train-worker-0) → HyperNode rack-2 (tier 1)",
        "domain     ml/llm-train (subgroup of ml/llm-train-worker-4) → HyperNode rack-3 (tier 1)",
        "domain     ml/llm-train → HyperNode spine-1 (tier 2)",
        "domain     ml/llm-small → HyperNode rack-1 (tier 1)",
        "waiting    ml/llm-late: no HyperNode of tier 1 or lower can hold the gang",
        "ml/llm-late              still waiting",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let node = |pod: &str| {
        let line = out
            .lines()
            .find(|l| l.contains(&format!("bind       ml/{pod} → ")))
            .unwrap_or_else(|| panic!("{pod}:\n{out}"));
        line.rsplit(' ').next().unwrap().to_string()
    };
    for w in 0..4 {
        assert!(node(&format!("llm-train-worker-{w}")).starts_with("rack-2-"), "{out}");
        assert!(node(&format!("llm-train-worker-{}", w + 4)).starts_with("rack-3-"), "{out}");
    }
    assert!(node("notebook-lab-0").starts_with("rack-0-"), "{out}");
    // The same late job without its constraint runs on the three free nodes.
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/topology/cluster.yaml"))
        .unwrap();
    let late = text.find("name: llm-late").unwrap();
    let flat = format!(
        "{}{}",
        &text[..late],
        text[late..].replacen("  networkTopology: {mode: hard, highestTierAllowed: 1}\n", "", 1)
    );
    let path = std::env::temp_dir().join(format!("tephra-flat-topology-{}.yaml", std::process::id()));
    std::fs::write(&path, flat).unwrap();
    let (code, out, err) = tephra(&["simulate", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("bind       ml/llm-late-worker-").count(), 3, "{out}");
}

/// HyperNodes discovered from node labels (`--hypernode-labels`): a gang
/// limited to one rack lands in the rack with room for all of it; without
/// the labels read there is no tree, and it spreads over both.
#[test]
fn hypernodes_from_node_labels_keep_a_gang_in_one_rack() {
    let mut text = String::new();
    for (n, rack) in [("n1", "r0"), ("n2", "r0"), ("n3", "r1"), ("n4", "r1")] {
        text.push_str(&format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: {n}, labels: {{example.com/spine: s0, example.com/rack: {rack}}}}}\n\
             status: {{allocatable: {{cpu: '2', memory: 8Gi, pods: '110'}}}}\n---\n"
        ));
    }
    text.push_str(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: filler, namespace: ns}\n\
         spec: {nodeName: n1, containers: [{resources: {requests: {cpu: '1'}}}]}\nstatus: {phase: Running}\n---\n\
         apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: ns}\n\
         spec: {minMember: 4, networkTopology: {mode: hard, highestTierAllowed: 1}}\n",
    );
    for i in 0..4 {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: g-{i}, namespace: ns, annotations: {{scheduling.k8s.io/group-name: g}}}}\n\
             spec: {{schedulerName: volcano, containers: [{{resources: {{requests: {{cpu: '1'}}}}}}]}}\n"
        ));
    }
    let path = std::env::temp_dir().join(format!("tephra-label-topology-{}.yaml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let file = path.to_str().unwrap();
    let (code, out, err) = tephra(&["simulate", file, "--hypernode-labels", "example.com/spine,example.com/rack"]);
    let (flat_code, flat, flat_err) = tephra(&["simulate", file]);
    let _ = std::fs::remove_file(&path);
    assert_eq!((code, flat_code), (0, 0), "{err}{flat_err}");
    let nodes = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.contains("bind       ns/g-"))
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
            .collect()
    };
    let placed = nodes(&out);
    assert_eq!(placed.len(), 4, "{out}");
    assert!(placed.iter().all(|n| n == "n3" || n == "n4"), "{out}");
    assert!(out.contains("domain     ns/g → HyperNode discovered-t1-r1 (tier 1)"), "{out}");
    let spread = nodes(&flat);
    assert_eq!(spread.len(), 4, "{flat}");
    assert!(spread.iter().any(|n| n == "n1" || n == "n2"), "{flat}");
}

/// The text of cycle `n` of a simulate run.
fn cycle(out: &str, n: usize) -> &str {
    let from = out.find(&format!("── cycle {n} ")).unwrap_or(out.len());
    let rest = &out[from..];
    let head = "── cycle ".len();
    let to = rest.get(head..).and_then(|r| r.find("── cycle ")).map_or(rest.len(), |i| i + head);
    &rest[..to]
}

/// A `batch/v1` Job with parallelism 3 and completions 6 runs three pods,
/// then three more, and completes with all six succeeded.
#[test]
fn batch_job_runs_its_completions_three_at_a_time() {
    let (code, out, err) = tephra(&["simulate", "examples/workloads/batch-job.yaml", "--cycles", "200"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("created    default/render-").count(), 6, "{out}");
    assert_eq!(out.matches("completed  default/render-").count(), 6, "{out}");
    assert!(out.contains("finished   Job default/render complete (6/6 succeeded)"), "{out}");
    // Never more than three at once: the second three are made after the first complete.
    let first = cycle(&out, 1);
    assert_eq!(first.matches("created    default/render-").count(), 3, "{first}");
    let at = |what: &str| out.find(what).unwrap_or_else(|| panic!("{what}:\n{out}"));
    assert!(at("completed  default/render-3") < at("created    default/render-4"), "{out}");
}

/// Volcano's capacity-plugin guide: demo-1 (queue1, deserving 2 CPU) takes
/// all 8 CPU while queue2 idles; demo-2 (queue2, deserving 6) arrives and
/// reclaim takes back what queue2 deserves, past its PodGroup's minMember
/// of 1, leaving 2 demo-1 pods and 6 demo-2 pods running, as the guide shows.
#[test]
fn capacity_guide_ends_with_two_and_six() {
    let (code, out, err) = tephra(&["simulate", "examples/workloads/capacity-guide.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\nsettled after "), "{out}");
    let running = |app: &str| {
        let started = out.matches(&format!("running    default/{app}-")).count() as i64;
        let evicted = out.matches(&format!("evict      default/{app}-")).count() as i64;
        started - evicted
    };
    assert_eq!((running("demo-1"), running("demo-2")), (2, 6), "{out}");
    // Before demo-2 arrives, demo-1 holds the whole cluster.
    assert_eq!(cycle(&out, 1).matches("bind       default/demo-1-").count(), 8, "{out}");
    // Its Deployment replaces the six evicted pods; they wait.
    assert_eq!(out.matches("created    default/demo-1-").count(), 14, "{out}");
    assert!(out.contains("default/podgroup-deployment-demo-2 1s (t=10s → t=11s)"), "{out}");
}

/// Time limits: a job's own, its queue's default and maximum, the queue's
/// `overrun: nothing`, and a pod's activeDeadlineSeconds, each ending the
/// pods at the right simulated second (examples/batch/time-limits.yaml).
#[test]
fn time_limits_end_overrunning_jobs() {
    let (code, out, err) = tephra(&["simulate", "examples/batch/time-limits.yaml", "--skip-idle"]);
    assert_eq!(code, 0, "{err}");
    // The Volcano Jobs' pods start at t=2s (made the cycle after admission, bound, then run).
    for (line, what) in [
        ("timeout    default/long-default0-0 after 30s (time limit of job default/long)", "own limit"),
        ("timeout    default/long-default0-1 after 30s (time limit of job default/long)", "own limit, every pod"),
        ("timeout    default/capped-default0-0 after 40s (time limit of job default/capped)", "queue maximum"),
        ("timeout    default/defaulted-default0-0 after 35s (time limit of job default/defaulted)", "queue default"),
        ("timeout    default/deadline after 25s (activeDeadlineSeconds)", "the pod's own deadline"),
        ("completed  default/short-default0-0", "within its limit"),
        ("completed  default/lenient-default0-0", "overrun: nothing"),
    ] {
        assert!(out.contains(line), "{what}: {line}\n{out}");
    }
    assert_eq!(out.matches("timeout ").count(), 5, "{out}");
    let at = |what: &str| out[..out.find(what).unwrap()].rfind("── cycle").map(|i| &out[i..i + 30]).unwrap();
    assert!(at("timeout    default/long-default0-0").contains("(t=32s)"), "{out}");
    assert!(at("completed  default/lenient-default0-0").contains("(t=62s)"), "{out}");
    // A bad value is one line naming the object and annotation.
    let dir = std::env::temp_dir().join(format!("tephra-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: q\n  annotations: {tephra.io/overrun: kill}\n",
    )
    .unwrap();
    let (code, _, err) = tephra(&["simulate", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("Queue q")
            && err.contains("metadata.annotations.tephra.io/overrun")
            && err.contains("\"kill\" is not evict, unprotect or nothing"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A StatefulSet starts its pods one after another, each once the one
/// before runs; a Deployment's pods come at once; one Node object with
/// `tephra.io/replicas` stands for two nodes.
#[test]
fn statefulset_starts_in_order_and_nodes_replicate() {
    let (code, out, err) = tephra(&["simulate", "examples/workloads/statefulset.yaml"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("tephra simulate: 2 nodes"), "{out}");
    assert!(out.contains("→ n-0") && out.contains("→ n-1"), "{out}");
    let made_in =
        |pod: &str| (1..20).find(|&n| cycle(&out, n).contains(&format!("created    default/{pod} "))).unwrap_or(0);
    let running_in =
        |pod: &str| (1..20).find(|&n| cycle(&out, n).contains(&format!("running    default/{pod}\n"))).unwrap_or(0);
    assert_eq!((made_in("api-1"), made_in("api-2")), (1, 1), "{out}");
    assert_eq!(made_in("web-0"), 1, "{out}");
    assert!(made_in("web-1") >= running_in("web-0") && running_in("web-0") > 0, "{out}");
    assert!(made_in("web-2") >= running_in("web-1") && made_in("web-2") > made_in("web-1"), "{out}");
    assert!(!out.contains("web-3"), "{out}");
}

/// An evicted plain pod is gone (nothing recreates it) and so is the
/// PodGroup made for it: it does not wait on with no tasks.
#[test]
fn an_evicted_plain_pods_podgroup_goes_with_it() {
    let text = r#"apiVersion: v1
kind: ConfigMap
metadata: {name: volcano-scheduler-configmap, namespace: volcano-system}
data:
  volcano-scheduler.conf: |
    actions: "allocate, preempt"
    tiers:
    - plugins:
      - name: priority
      - name: gang
        enablePreemptable: false
      - name: conformance
    - plugins:
      - name: predicates

---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: ns}
spec: {schedulerName: volcano, priorityClassName: low, containers: [{resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: high, namespace: ns, annotations: {tephra.io/arrive-at: "3"}}
spec: {schedulerName: volcano, priorityClassName: high, containers: [{resources: {requests: {cpu: "1"}}}]}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 1
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 100
"#;
    let path = std::env::temp_dir().join(format!("tephra-plain-pg-{}.yaml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let (code, out, err) = tephra(&["simulate", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("evict      ns/low on n1"), "{out}");
    assert!(out.contains("bind       ns/high → n1"), "{out}");
    let after = &out[out.find("evict      ns/low").unwrap()..];
    assert!(!after.contains("waiting    ns/podgroup-low"), "{out}");
}

/// A CronJob makes a Job at each scheduled time of the simulated clock
/// (every two minutes: t=120, 240, 360, 480 in 500 seconds), each running
/// its pod to completion.
#[test]
fn cronjob_makes_a_job_each_scheduled_time() {
    let (code, out, err) = tephra(&["simulate", "examples/workloads/cronjob.yaml", "--cycles", "500"]);
    assert_eq!(code, 0, "{err}");
    let jobs: Vec<&str> = out.lines().filter(|l| l.contains("(by CronJob default/report)")).collect();
    assert_eq!(jobs.len(), 4, "{out}");
    for (k, minute) in [2, 4, 6, 8].iter().enumerate() {
        assert!(jobs[k].contains(&format!("Job default/report-{minute} ")), "{out}");
        let at = cycle(&out, minute * 60 + 1);
        assert!(at.contains(&format!("created    Job default/report-{minute} ")), "cycle at t={}:\n{at}", minute * 60);
    }
    assert_eq!(out.matches("finished   Job default/report-").count(), 3, "{out}");
}

/// examples/batch/backfill.yaml (docs/batch.md): short runs on the reserved
/// node while big waits for busy's limit, big starts when predicted, long
/// (too long for the gap, then for the maintenance window) waits; the
/// estimates made at t=0 are the simulated starts.
#[test]
fn backfill_example_and_its_estimates() {
    let (code, out, err) = tephra(&["simulate", "examples/batch/backfill.yaml", "--skip-idle"]);
    assert_eq!(code, 0, "{err}");
    for line in [
        "bind       hpc/short-0 → n2",
        "reserved   job hpc/big: n1, n2 (starts by t=10s)",
        "reservation rack-b-maintenance: Pending on n2 (window t=60s–120s)",
        "waiting    hpc/long-0: 0/2 nodes are available: 2 node reserved for job hpc/big (reservation)",
        "hpc/big                  10s (t=0s → t=10s)",
        "hpc/long                 41s (t=0s → t=41s)",
        "bind       hpc/long-0 → n1",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    let (code, est, err) = tephra(&["estimate", "examples/batch/backfill.yaml"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = est.lines().map(str::trim_end).collect();
    assert_eq!(lines, ["hpc/big    t=10s", "hpc/short  t=0s", "hpc/long   t=41s"], "{est}");
}

/// On the live clock (`tephra fidelity`'s), an arrival and a pod's end at a
/// cycle's instant are seen a cycle later, as a scheduler ticking on its own
/// clock sees them; by default they are seen at once.
#[test]
fn the_live_clock_sees_events_at_a_cycles_instant_a_cycle_later() {
    let dir = std::env::temp_dir().join(format!("tephra-live-clock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("one.csv");
    std::fs::write(&trace, "job,submit,duration,tasks,min_available,queue,cpu,memory\none,20,30,1,1,default,1,1Gi\n")
        .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["simulate", "examples/lab/cluster.yaml", trace.to_str().unwrap(), "--period", "10"];
        args.extend(extra);
        let (code, out, err) = tephra(&args);
        assert_eq!(code, 0, "{err}");
        out
    };
    let line = |out: &str, what: &str| -> String {
        let at = out.find(what).unwrap_or_else(|| panic!("{what}:\n{out}"));
        let cycle_start = out[..at].rfind("── cycle ").unwrap();
        out[cycle_start..].lines().next().unwrap().to_string()
    };
    let plain = run(&["--start-on-bind"]);
    assert!(line(&plain, "bind       default/one-0").contains("t=30s"), "{plain}");
    assert!(line(&plain, "completed  default/one-0").contains("t=60s"), "{plain}");
    let live = run(&["--start-on-bind", "--live-clock"]);
    assert!(line(&live, "bind       default/one-0").contains("t=40s"), "{live}");
    assert!(line(&live, "completed  default/one-0").contains("t=80s"), "{live}");
    let _ = std::fs::remove_dir_all(&dir);
}
