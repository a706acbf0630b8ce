//! Hot swap while scheduling: versions switch exactly between cycles, bad
//! versions never go live, a version that keeps trapping is rolled back, and
//! a shadow's decisions are compared without being applied.

use std::path::Path;
use tephra::config::{PluginConf, SchedulerConfig};
use tephra::model::Cluster;
use tephra::scheduler::scheduler::Level;
use tephra::scheduler::{Actor, Library, Scheduler};
use tephra::session::{Decision, Outcome};
use tephra::wasm::builtin::FIXTURES_DIR;

fn version(v: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES_DIR).join("swap").join(format!("prefer-{v}.wasm"))).unwrap()
}

fn cluster() -> Cluster {
    tephra::synthetic::small(2, 4000.0, 1, 1000.0, 1)
}

fn scheduler() -> Scheduler {
    let config = SchedulerConfig {
        actions: vec!["allocate".into()],
        tiers: vec![vec![PluginConf::new("gang")], vec![PluginConf::new("predicates"), PluginConf::new("prefer")]],
        action_args: Default::default(),
        unset_is_on: true,
        limits: Default::default(),
    };
    let lib = Library::load(None).unwrap();
    let mut s = Scheduler::new(config, &lib);
    s.swap(&version("first"), "prefer-first.wasm").unwrap();
    s
}

fn bound_to(out: &Outcome) -> Vec<String> {
    out.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Bind { node, .. } => Some(out.names.nodes[*node as usize].clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn swap_every_cycle_for_100_cycles() {
    let mut s = scheduler();
    let c = cluster();
    let (first, last) = (version("first"), version("last"));
    for i in 0..100 {
        let (bytes, want) = if i % 2 == 0 { (&last, "n2") } else { (&first, "n1") };
        s.swap(bytes, "swap").unwrap();
        let out = s.cycle(&c, &Default::default(), i * 1000);
        assert!(out.faults.is_empty(), "cycle {i}: {:?}", out.faults);
        assert_eq!(bound_to(&out), [want], "cycle {i}: decisions switch exactly at the swap");
    }
    assert_eq!(s.stats.cycles, 100);
    assert_eq!(s.stats.swaps, 101);
    // Each version is held once, however often it went live: the one
    // replaced; a rollback brings it back and keeps the other to roll forward.
    assert_eq!(s.library.previous("prefer").len(), 1);
    s.library.rollback("prefer").unwrap();
    assert!(s.library.rollback("prefer").is_err(), "the rolled-back-from version is no earlier one");
    s.library.forward("prefer").unwrap();
    assert!(s.library.forward("prefer").is_err());
}

#[test]
fn a_version_failing_its_dry_run_never_goes_live() {
    let mut s = scheduler();
    let c = cluster();
    assert_eq!(bound_to(&s.cycle(&c, &Default::default(), 5000)), ["n1"]);
    // The latest snapshot is at t=5s: the broken version traps in its dry run.
    let e = s.swap(&version("broken"), "prefer-broken.wasm").unwrap_err().to_string();
    assert!(e.contains("prefer-broken.wasm: dry run on the latest snapshot failed in node-order"), "{e}");
    assert!(e.contains("deliberate trap"), "{e}");
    let e = s.swap(b"not a component", "junk.wasm").unwrap_err().to_string();
    assert!(e.starts_with("junk.wasm: not a loadable WebAssembly component"), "{e}");
    let mut cut = version("last");
    cut.truncate(cut.len() / 3);
    assert!(s.swap(&cut, "cut.wasm").is_err());
    let out = s.cycle(&c, &Default::default(), 6000);
    assert_eq!(bound_to(&out), ["n1"], "the running version kept serving");
    assert!(out.faults.is_empty());
}

#[test]
fn a_version_that_keeps_trapping_is_rolled_back() {
    let mut s = scheduler();
    let c = cluster();
    s.cycle(&c, &Default::default(), 0);
    // Passes its dry run at t=0, traps from then on.
    s.swap(&version("broken"), "prefer-broken.wasm").unwrap();
    for t in 1..=3 {
        let out = s.cycle(&c, &Default::default(), t * 1000);
        assert!(out.faults.iter().any(|f| f.plugin == "prefer"), "cycle {t}");
        assert_eq!(bound_to(&out).len(), 1, "cycle {t}: still scheduling without the faulty plugin");
    }
    assert!(
        s.notices.iter().any(|n| n.text.contains("faulted 3 cycles in a row") && n.level == Level::Warn),
        "{:?}",
        s.notices
    );
    let out = s.cycle(&c, &Default::default(), 4000);
    assert!(out.faults.is_empty(), "{:?}", out.faults);
    assert_eq!(bound_to(&out), ["n1"]);
    // Manual rollback too.
    s.swap(&version("last"), "prefer-last.wasm").unwrap();
    assert_eq!(bound_to(&s.cycle(&c, &Default::default(), 5000)), ["n2"]);
    s.rollback("prefer", Actor::Admin("test".into())).unwrap();
    assert_eq!(bound_to(&s.cycle(&c, &Default::default(), 6000)), ["n1"]);
}

#[test]
fn a_shadow_is_compared_not_applied_then_promoted() {
    let mut s = scheduler();
    let c = cluster();
    s.set_shadow(&version("last"), "prefer-last.wasm").unwrap();
    let out = s.cycle(&c, &Default::default(), 0);
    assert_eq!(bound_to(&out), ["n1"], "live decisions applied");
    assert_eq!(s.shadow_diffs.len(), 1);
    let d = &s.shadow_diffs[0];
    assert_eq!(d.plugin, "prefer");
    assert_eq!(d.moved, ["ns/p-0: live n1, shadow n2"]);
    assert!(d.binds_live_only.is_empty() && d.binds_shadow_only.is_empty());
    assert_eq!(s.stats.shadow_diffs, 1, "one pod placed elsewhere is one difference");
    s.promote_shadow("prefer", Actor::Admin("test".into())).unwrap();
    let out = s.cycle(&c, &Default::default(), 1000);
    assert_eq!(bound_to(&out), ["n2"]);
    assert!(s.shadow_diffs.is_empty());
    let e = s.set_shadow(&version("last"), "x.wasm");
    assert!(e.is_ok());
    let lib = Library::load(None).unwrap();
    let mut other = Scheduler::new(SchedulerConfig::default_config(), &lib);
    let e = other.set_shadow(&version("last"), "prefer-last.wasm").unwrap_err().to_string();
    assert!(e.contains("not in the scheduler config"), "{e}");
}
