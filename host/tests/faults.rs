//! A plugin that breaks the contract never stops the cycle: the fault is
//! reported with a clear message and the other plugins keep scheduling,
//! and a faulted gate stays shut unless its fault policy is `skip`.

use std::path::Path;
use std::time::Duration;
use tephra::config::{PluginConf, SchedulerConfig};
use tephra::model::Cluster;
use tephra::plugin::{Answer, Backend, Call};
use tephra::policy::Policies;
use tephra::scheduler::{Library, Scheduler};
use tephra::session::{Decision, Session};
use tephra::wasm::builtin::FIXTURES_DIR;
use tephra::wasm::{Runtime, Sandbox, WasmPlugin, SESSIONS_PER_INSTANCE};

fn cluster() -> Cluster {
    tephra::synthetic::small(2, 2000.0, 2, 1500.0, 2)
}

/// `faulty` in `mode`, with `faultPolicy: skip` (it abstains once down).
fn config(mode: &str) -> SchedulerConfig {
    let mut c = closed_config(mode);
    c.tiers[0][1].fault_skip = true;
    c
}

/// `faulty` in `mode` with the default fault policy, fail-closed.
fn closed_config(mode: &str) -> SchedulerConfig {
    let mut faulty = PluginConf::new("faulty");
    faulty.arguments.push(("mode".into(), mode.into()));
    SchedulerConfig {
        actions: vec!["enqueue".into(), "allocate".into()],
        tiers: vec![
            vec![PluginConf::new("gang"), faulty],
            vec![PluginConf::new("predicates"), PluginConf::new("nodeorder")],
        ],
        action_args: Default::default(),
        unset_is_on: true,
        limits: Default::default(),
    }
}

fn library() -> Library {
    let sandbox = Sandbox { call_deadline: Duration::from_millis(200), memory_bytes: 64 << 20, ..Default::default() };
    Library::load_with(Some(Path::new(FIXTURES_DIR)), sandbox).unwrap()
}

#[test]
fn faulty_plugins_never_stop_the_cycle() {
    let lib = library();
    let cases = [
        ("trap", "predicate", "deliberate panic in predicate"),
        ("bad-reason", "predicate", "out of contract"),
        ("short-scores", "node-order", "out of contract"),
        ("nan", "node-order", "non-finite"),
        ("loop", "node-order", "interrupt"),
        ("oom", "open-session", "open-session failed"),
        ("open-fails", "open-session", "refuses every session"),
        ("huge", "node-order", ""),
        ("explain-trap", "predicate", "deliberate panic in explain"),
    ];
    for (mode, point, needle) in cases {
        let mut sched = Scheduler::new(config(mode), &lib);
        let out = sched.cycle(&cluster(), &Default::default(), 0);
        let binds = out.decisions.iter().filter(|d| matches!(d, Decision::Bind { .. })).count();
        assert_eq!(binds, 2, "mode {mode}: the gang must still be placed");
        let fault = out.faults.iter().find(|f| f.plugin == "faulty").unwrap_or_else(|| panic!("mode {mode}: no fault"));
        assert_eq!(fault.point, point, "mode {mode}: {fault:?}");
        assert!(fault.message.to_lowercase().contains(needle), "mode {mode}: {fault:?}");
        assert!(out.faults.iter().all(|f| f.plugin == "faulty"), "mode {mode}: {:?}", out.faults);
        // A fresh instance next cycle: the plugin is tried again and fails the same way.
        let again = sched.cycle(&cluster(), &Default::default(), 1000);
        assert!(again.faults.iter().any(|f| f.plugin == "faulty"), "mode {mode}");
    }
}

/// A plugin that traps while starting a session from the last one sits that
/// session out; the next one gives it the whole snapshot, and it is back.
#[test]
fn a_fault_in_update_session_falls_back_to_the_whole_snapshot() {
    let lib = library();
    let mut sched = Scheduler::new(config("update-trap"), &lib);
    let c = cluster();
    let faults = |out: &tephra::session::Outcome| out.faults.iter().map(|f| f.message.clone()).collect::<Vec<_>>();
    let first = sched.cycle(&c, &Default::default(), 0);
    assert!(first.faults.is_empty(), "{:?}", faults(&first));
    // Nothing changed: the session starts from the last one, and the plugin traps.
    let second = sched.cycle(&c, &Default::default(), 1000);
    let f = second.faults.iter().find(|f| f.plugin == "faulty").expect("a fault in update-session");
    assert_eq!(f.point, "open-session", "{f:?}");
    assert!(f.message.contains("deliberate panic in update-session"), "{f:?}");
    // Its instance was discarded: the next session is opened from the whole snapshot.
    let third = sched.cycle(&c, &Default::default(), 2000);
    assert!(third.faults.is_empty(), "{:?}", faults(&third));
    assert_eq!(sched.sessions.opens.updated, 2);
}

/// A plugin flooding its log and stderr is cut off and rate-limited; it
/// still answers, so it is not a fault.
#[test]
fn log_floods_are_contained() {
    let lib = library();
    let mut sched = Scheduler::new(config("spam"), &lib);
    let started = std::time::Instant::now();
    let out = sched.cycle(&cluster(), &Default::default(), 0);
    assert!(out.faults.is_empty(), "{:?}", out.faults);
    assert_eq!(out.decisions.iter().filter(|d| matches!(d, Decision::Bind { .. })).count(), 2);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

/// An instance serves session after session; one that trapped is replaced,
/// one that grew past half the memory cap (here a plugin leaking 20 MiB per
/// session under a 64 MiB cap) starts afresh instead of running out, and
/// none serves more than `SESSIONS_PER_INSTANCE` sessions.
#[test]
fn instances_are_kept_across_sessions_unless_broken_or_grown() {
    let runtime = Runtime::new(Sandbox { memory_bytes: 64 << 20, ..Default::default() }).unwrap();
    let bytes = std::fs::read(Path::new(FIXTURES_DIR).join("faulty.wasm")).unwrap();
    let mut plugin = WasmPlugin::load(&runtime, &bytes, "faulty.wasm").unwrap();
    let ssn = Session::open(&cluster(), Policies::new(Vec::new(), true), &Default::default(), 0, 1);
    let session = |plugin: &mut WasmPlugin, mode: &str, then: Option<Call<'_>>| {
        plugin.open_session(&ssn.snap, &ssn.names, &[("mode".into(), mode.into())])?;
        let answer = then.map(|c| plugin.call(c)).transpose();
        let closed = plugin.close_session();
        let answer = answer?;
        closed.map(|_| answer)
    };
    for _ in 0..3 {
        let scores = session(&mut plugin, "plain", Some(Call::NodeOrder(0, &[0, 1]))).unwrap();
        assert!(matches!(scores, Some(Answer::Keys(k)) if k == [0.0, 1.0]));
    }
    assert_eq!(plugin.instantiations(), 1);
    let e = session(&mut plugin, "trap", Some(Call::Predicate(0, &[0]))).unwrap_err();
    assert!(e.contains("deliberate panic"), "{e}");
    session(&mut plugin, "plain", None).unwrap();
    assert_eq!(plugin.instantiations(), 2, "a trapped instance is replaced");
    // Kept after one leaking session (~21 MiB), dropped after the second
    // (~41 MiB): six sessions on the kept instance and two fresh ones, none
    // out of memory (kept for ever, the fourth would need 81 MiB).
    for i in 0..6 {
        session(&mut plugin, "leak", None).unwrap_or_else(|e| panic!("leaking session {i}: {e}"));
    }
    assert_eq!(plugin.instantiations(), 4);
    // And none serves more than SESSIONS_PER_INSTANCE sessions.
    session(&mut plugin, "plain", None).unwrap();
    let first = plugin.instantiations();
    for _ in 0..SESSIONS_PER_INSTANCE {
        session(&mut plugin, "plain", None).unwrap();
    }
    assert_eq!(plugin.instantiations(), first + 1);
}

/// Questions about one node take the scalar forms (`predicate-node` with
/// `explain`, `node-score`, `on-event`) and answer as the list forms do.
#[test]
fn one_node_questions_answer_like_the_lists() {
    let runtime = Runtime::new(Sandbox::default()).unwrap();
    let bytes = std::fs::read(Path::new(FIXTURES_DIR).join("faulty.wasm")).unwrap();
    let mut plugin = WasmPlugin::load(&runtime, &bytes, "faulty.wasm").unwrap();
    let ssn = Session::open(&cluster(), Policies::new(Vec::new(), true), &Default::default(), 0, 1);
    // Each session's first reason has code 1: the host must not keep the
    // last session's meaning of it.
    for why in ["node full", "wrong zone"] {
        let args = [("mode".into(), "reject-all".into()), ("why".into(), why.into())];
        plugin.open_session(&ssn.snap, &ssn.names, &args).unwrap();
        let Answer::Fit(batch) = plugin.call(Call::Predicate(0, &[0, 1])).unwrap() else { panic!("a fit") };
        assert_eq!(batch.codes, [1, 1]);
        assert_eq!(batch.reasons[0].message, why);
        for node in [0, 1, 0] {
            let Answer::Verdict(v) = plugin.call(Call::Predicate(0, &[node])).unwrap() else { panic!("a verdict") };
            assert_eq!(v, Some((why.into(), false)), "node {node}");
        }
        let Answer::Keys(one) = plugin.call(Call::NodeOrder(0, &[1])).unwrap() else { panic!("keys") };
        assert_eq!(one, [1.0]);
        plugin.close_session().unwrap();
    }
    plugin.open_session(&ssn.snap, &ssn.names, &[("mode".into(), "plain".into())]).unwrap();
    let Answer::Verdict(v) = plugin.call(Call::Predicate(0, &[1])).unwrap() else { panic!("a verdict") };
    assert_eq!(v, None);
    plugin.close_session().unwrap();
}

/// A component of a contract version the host does not speak is refused at
/// load, naming what the host looks for.
#[test]
fn wrong_contract_version_is_refused() {
    let runtime = Runtime::new(Sandbox::default()).unwrap();
    let bytes = std::fs::read(Path::new(FIXTURES_DIR).join("hostile/wrong-contract.wasm")).unwrap();
    let e = WasmPlugin::load(&runtime, &bytes, "wrong-contract.wasm").err().unwrap().to_string();
    assert!(e.starts_with("wrong-contract.wasm: exports no plugin contract this host speaks"), "{e}");
    for v in tephra::contract::SUPPORTED {
        assert!(e.contains(&format!("@{v}")), "{v}: {e}");
    }
}

/// A component importing more than the contract, clocks, randomness,
/// stdio and a filesystem without directories (here sockets) is refused at
/// load, naming the import.
#[test]
fn forbidden_imports_are_refused() {
    let runtime = Runtime::new(Sandbox::default()).unwrap();
    let bytes = std::fs::read(Path::new(FIXTURES_DIR).join("hostile/wrong-imports.wasm")).unwrap();
    let e = WasmPlugin::load(&runtime, &bytes, "snoop.wasm").err().unwrap().to_string();
    assert!(e.starts_with("snoop.wasm: imports wasi:sockets/"), "{e}");
    assert!(e.contains("which tephra does not offer to plugins"), "{e}");
}

#[test]
fn broken_components_are_refused_with_their_origin() {
    let runtime = Runtime::new(Sandbox::default()).unwrap();
    let e = WasmPlugin::load(&runtime, b"definitely not wasm", "junk.wasm").err().unwrap().to_string();
    assert!(e.starts_with("junk.wasm: not a loadable WebAssembly component"), "{e}");
    // A core module is not a component of our world.
    let core = b"\0asm\x01\0\0\0";
    let e = WasmPlugin::load(&runtime, core, "core.wasm").err().unwrap().to_string();
    assert!(e.starts_with("core.wasm:"), "{e}");
    let good = std::fs::read(Path::new(FIXTURES_DIR).join("test-rejecter.wasm")).unwrap();
    let p = WasmPlugin::load(&runtime, &good, "test-rejecter.wasm").unwrap();
    assert_eq!(p.info().name, "test-rejecter");
    let mut truncated = good.clone();
    truncated.truncate(good.len() / 2);
    assert!(WasmPlugin::load(&runtime, &truncated, "cut.wasm").is_err());
}

/// By default a faulted plugin fails closed: at each gate it implements it
/// refuses, so nothing passes that it might have stopped (a partial gang, a
/// queue over its quota); a fault in a score or an order changes nothing
/// but the ranking.
#[test]
fn faults_close_the_gates_by_default() {
    let lib = library();
    let gates = [
        ("trap", "", "predicate"),
        ("bad-reason", "", "predicate"),
        ("open-fails", "", "open-session"),
        ("oom", "", "open-session"),
        ("gate-trap", "allocatable", "allocatable"),
        ("gate-trap", "job-ready", "job-ready"),
        ("gate-trap", "overused", "overused"),
        ("gate-trap", "enqueueable", "job-enqueueable"),
    ];
    let binds =
        |out: &tephra::session::Outcome| out.decisions.iter().filter(|d| matches!(d, Decision::Bind { .. })).count();
    for (mode, gate, point) in gates {
        let mut config = closed_config(mode);
        config.tiers[0][1].arguments.push(("gate".into(), gate.into()));
        // The same plugin with `faultPolicy: skip` lets the gang through.
        let mut skip = config.clone();
        skip.tiers[0][1].fault_skip = true;
        // The gang waits to be admitted with a minimum, so that enqueue asks.
        let mut c = cluster();
        for g in c.podgroups.iter_mut() {
            g.phase = tephra::model::Phase::Pending;
            g.min_resources = Some([("cpu".to_string(), 1.0)].into());
        }
        let out = Scheduler::new(skip, &lib).cycle(&c, &Default::default(), 0);
        assert_eq!(binds(&out), 2, "{mode} {gate} skip: {:?}", out.faults);
        let out = Scheduler::new(config, &lib).cycle(&c, &Default::default(), 0);
        assert_eq!(binds(&out), 0, "{mode} {gate}: {:?}", out.decisions);
        let f = out.faults.iter().find(|f| f.plugin == "faulty").unwrap_or_else(|| panic!("{mode} {gate}: no fault"));
        assert_eq!(f.point, point, "{mode} {gate}: {f:?}");
    }
    // A fault in a score leaves the plugin down too: its gates stay shut
    // for the rest of the session, whatever point it faulted in.
    for mode in ["nan", "short-scores", "loop"] {
        let out = Scheduler::new(closed_config(mode), &lib).cycle(&cluster(), &Default::default(), 0);
        assert_eq!(binds(&out), 0, "{mode}");
        assert_eq!(out.faults.iter().filter(|f| f.plugin == "faulty").count(), 1, "{mode}: {:?}", out.faults);
        let why: Vec<String> = out.fit_errors.values().map(|e| e.summary()).collect();
        assert!(why.iter().any(|w| w.contains("fail-closed (faulty")), "{mode}: {why:?}");
    }
}

/// A trapping predicate plugin with the default policy rejects every node
/// with a reason naming it; the policy key is checked.
#[test]
fn fail_closed_rejects_while_the_plugin_is_down() {
    let lib = library();
    let mut sched = Scheduler::new(closed_config("trap"), &lib);
    let out = sched.cycle(&cluster(), &Default::default(), 0);
    assert!(out.decisions.is_empty(), "{:?}", out.decisions);
    assert!(out.faults.iter().any(|f| f.plugin == "faulty"));
    let why = out.fit_errors.values().next().expect("a reason per pending task").summary();
    assert!(why.contains("fail-closed (faulty)"), "{why}");
    let text = "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    faultPolicy: closed\n";
    let e = SchedulerConfig::parse(text, "c.yaml").unwrap_err().to_string();
    assert!(e.contains("c.yaml: tiers[0].plugins[0].faultPolicy: expected skip or fail-closed"), "{e}");
}

/// Time a plugin spends waiting counts: it cannot block the host thread in a
/// sleep (timers are ready at once), and waiting on the clock in a loop is
/// its own code, which the call deadline stops.
#[test]
fn plugins_cannot_stall_a_cycle_by_waiting() {
    let lib = library();
    let binds =
        |out: &tephra::session::Outcome| out.decisions.iter().filter(|d| matches!(d, Decision::Bind { .. })).count();
    // A 25 s sleep returns at once: no fault, the cycle goes on.
    let out = Scheduler::new(config("sleep"), &lib).cycle(&cluster(), &Default::default(), 0);
    assert!(out.faults.is_empty(), "{:?}", out.faults);
    assert_eq!(binds(&out), 2);
    // A 25 s busy wait is interrupted by the 200 ms deadline.
    let out = Scheduler::new(config("spin"), &lib).cycle(&cluster(), &Default::default(), 0);
    let f = out.faults.iter().find(|f| f.plugin == "faulty").expect("a fault");
    assert_eq!(f.point, "open-session");
    assert!(f.message.contains("interrupt"), "{f:?}");
}

/// The instance made at load time (to ask `info()`) runs under the memory
/// cap too: under a cap smaller than the component's own initial memory,
/// loading fails instead of running unlimited.
#[test]
fn loading_runs_under_the_memory_cap() {
    let bytes = std::fs::read(Path::new(FIXTURES_DIR).join("faulty.wasm")).unwrap();
    let tiny = Runtime::new(Sandbox { memory_bytes: 64 << 10, ..Default::default() }).unwrap();
    let e = WasmPlugin::load(&tiny, &bytes, "faulty.wasm").err().expect("refused under a 64 KiB cap").to_string();
    assert!(e.contains("faulty.wasm: instantiation failed") && e.contains("memory"), "{e}");
    let roomy = Runtime::new(Sandbox { memory_bytes: 64 << 20, ..Default::default() }).unwrap();
    assert!(WasmPlugin::load(&roomy, &bytes, "faulty.wasm").is_ok());
}

/// All instances together stay within one budget: plugins each under their
/// own cap cannot add up past it; a dropped instance gives its memory back.
#[test]
fn plugins_share_one_memory_budget() {
    let sandbox = Sandbox { memory_bytes: 64 << 20, total_memory_bytes: 56 << 20, ..Default::default() };
    let runtime = Runtime::new(sandbox).unwrap();
    let bytes = std::fs::read(Path::new(FIXTURES_DIR).join("faulty.wasm")).unwrap();
    let load = || WasmPlugin::load(&runtime, &bytes, "faulty.wasm").unwrap();
    let (mut a, mut b, mut c) = (load(), load(), load());
    assert_eq!(runtime.memory_held(), 0, "the load-time instances are gone");
    let ssn = Session::open(&cluster(), Policies::new(Vec::new(), true), &Default::default(), 0, 1);
    let leak = [("mode".to_string(), "leak".to_string())];
    // Each leaking session holds ~21 MiB: two fit in 56 MiB, a third does not.
    a.open_session(&ssn.snap, &ssn.names, &leak).unwrap();
    b.open_session(&ssn.snap, &ssn.names, &leak).unwrap();
    assert!(runtime.memory_held() > 40 << 20, "{}", runtime.memory_held());
    let e = c.open_session(&ssn.snap, &ssn.names, &leak).unwrap_err();
    assert!(e.contains("plugins together hold") && e.contains("56 MiB budget"), "{e}");
    drop(a);
    c.open_session(&ssn.snap, &ssn.names, &leak).unwrap();
    drop((b, c));
    assert_eq!(runtime.memory_held(), 0);
}
