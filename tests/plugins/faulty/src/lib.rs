//! A hostile policy for the host's fault tests. Argument `mode` picks the
//! misbehaviour: `trap` (panics in predicate), `bad-reason` (predicate code
//! pointing past its reasons), `short-scores` (wrong number of scores),
//! `nan` (NaN node scores), `bad-victim` (names a non-candidate), `loop`
//! (never returns from node-order), `oom` (allocates without bound),
//! `open-fails` (refuses the session), `huge` (returns 20 million scores),
//! `spam` (floods the log and stderr, answers correctly), `leak` (keeps
//! 20 MiB past every session, answers correctly), `update-trap` (panics
//! when a session is to start from the last one, answers correctly),
//! `reject-all` (rejects every node for the reason in argument `why`: a
//! well-formed answer),
//! `explain-trap` (rejects every node it is asked about alone, and panics
//! when asked why), `sleep` (sleeps 25 s when a session opens, then answers
//! correctly), `spin` (waits 25 s on the clock in a loop when a session
//! opens), `slow` (spins 300 ms when a session opens, then answers
//! correctly), `forge` (logs a line with a forged second line and
//! 3 × 20 MB lines, answers correctly), `huge-fault` (refuses the session
//! with a 50 MB message of many lines), `gate-trap` (panics at the gate
//! named by argument
//! `gate`: `allocatable`, `job-ready`, `overused`, `enqueueable`; at every
//! gate it otherwise says yes).

use tephra_sdk::{Args, ExtensionPoint as P, Policy, Session, Unfit, Vote};

#[derive(Default)]
pub struct Faulty {
    mode: String,
    /// Argument `why`: the reason `reject-all` gives.
    why: String,
    /// Argument `gate`: where `gate-trap` panics.
    gate: String,
}

impl Policy for Faulty {
    const NAME: &'static str = "faulty";
    const POINTS: &'static [P] = &[
        P::Predicate,
        P::NodeOrder,
        P::Preemptable,
        P::JobOrder,
        P::Allocatable,
        P::JobReady,
        P::Overused,
        P::JobEnqueueable,
    ];

    fn open(&mut self, _s: &Session, args: &Args) -> Result<(), String> {
        self.mode = args.get("mode").unwrap_or("trap").to_string();
        self.why = args.get("why").unwrap_or("never fits").to_string();
        self.gate = args.get("gate").unwrap_or_default().to_string();
        if self.mode == "open-fails" {
            return Err("this plugin refuses every session".into());
        }
        if self.mode == "sleep" {
            std::thread::sleep(std::time::Duration::from_secs(25));
        }
        if self.mode == "slow" {
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_millis(300) {}
        }
        if self.mode == "spin" {
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_secs(25) {}
        }
        if self.mode == "huge-fault" {
            return Err("refused\nERROR forged fault line\n".repeat(2 << 20));
        }
        if self.mode == "leak" {
            std::mem::forget(std::hint::black_box(vec![1u8; 20 << 20]));
        }
        if self.mode == "oom" {
            let mut hog: Vec<Vec<u8>> = Vec::new();
            loop {
                hog.push(vec![1; 16 << 20]);
            }
        }
        Ok(())
    }

    fn predicate(&mut self, _s: &Session, _t: u32, _n: u32) -> Result<(), Unfit> {
        match self.mode.as_str() {
            "trap" => panic!("faulty plugin: deliberate panic in predicate"),
            "reject-all" => Err(Unfit::new(self.why.as_str())),
            _ => Ok(()),
        }
    }

    fn node_order(&mut self, _s: &Session, _t: u32, nodes: &[u32], scores: &mut [f64]) {
        match self.mode.as_str() {
            "nan" => scores.iter_mut().for_each(|x| *x = f64::NAN),
            "spam" => {
                for i in 0..2_000 {
                    tephra_sdk::log::warn(&format!("spam line {i}"));
                    eprintln!("{}", "x".repeat(100));
                }
                scores.iter_mut().zip(nodes).for_each(|(x, n)| *x = *n as f64);
            }
            "forge" => {
                tephra_sdk::log::warn("looks fine\nERROR forged by a plugin");
                for _ in 0..3 {
                    tephra_sdk::log::info(&"y".repeat(20 << 20));
                }
                scores.iter_mut().zip(nodes).for_each(|(x, n)| *x = *n as f64);
            }
            "loop" => {
                let mut i: u64 = 0;
                while std::hint::black_box(i) < u64::MAX {
                    i = i.wrapping_add(1) % 7;
                }
            }
            _ => scores.iter_mut().zip(nodes).for_each(|(x, n)| *x = *n as f64),
        }
    }

    fn preemptable(&mut self, _s: &Session, _p: u32, candidates: &[u32]) -> (Vec<u32>, Vote) {
        (candidates.iter().map(|c| c + 1_000_000).collect(), Vote::Permit)
    }
}

// A hand-written export: it corrupts answers the SDK would keep valid.
#[cfg(target_arch = "wasm32")]
mod export {
    use super::*;
    use tephra_sdk::bindings::exports::tephra::scheduler::session;
    use tephra_sdk::types::*;
    use tephra_sdk::{points, Runtime};

    std::thread_local! {
        static RT: std::cell::RefCell<Runtime<Faulty>> = std::cell::RefCell::new(Runtime::default());
    }
    fn rt<R>(f: impl FnOnce(&mut Runtime<Faulty>) -> R) -> R {
        RT.with(|r| f(&mut r.borrow_mut()))
    }
    fn mode() -> String {
        rt(|r| r.plugin.mode.clone())
    }
    /// Panics when the mode is `gate-trap` at `gate`.
    fn gate(gate: &str) {
        if mode() == "gate-trap" && rt(|r| r.plugin.gate.clone()) == gate {
            panic!("faulty plugin: deliberate panic in {gate}");
        }
    }

    struct Export;
    impl session::Guest for Export {
        fn info() -> session::PluginInfo {
            Runtime::<Faulty>::info()
        }
        fn open_session(s: Snapshot, a: Vec<(String, String)>) -> Result<(), String> {
            rt(|r| r.open_session(s, a))
        }
        fn update_session(d: SnapshotDelta, a: Vec<(String, String)>) -> Result<bool, String> {
            if mode() == "update-trap" {
                panic!("faulty plugin: deliberate panic in update-session");
            }
            rt(|r| r.update_session(&d, a))
        }
        fn close_session() {
            rt(|r| r.close_session())
        }
        fn on_events(e: Vec<Event>) {
            rt(|r| r.on_events(&e))
        }
        fn on_event(e: Event) {
            rt(|r| r.on_events(&[e]))
        }
    }
    tephra_sdk::bindings::__export_session!(Export with_types_in tephra_sdk::bindings);

    impl points::job_order::exports::tephra::scheduler::job_order::Guest for Export {
        fn job_order(j: Vec<u32>) -> Vec<f64> {
            vec![0.0; j.len()]
        }
    }
    points::job_order::__export_job_order!(Export with_types_in tephra_sdk::points::job_order);

    impl points::predicate::exports::tephra::scheduler::predicate::Guest for Export {
        fn predicate(t: u32, n: Vec<u32>) -> Fit {
            if mode() == "bad-reason" {
                return Fit {
                    codes: vec![7; n.len()],
                    reasons: vec![Reason { message: "x".into(), unresolvable: false }],
                };
            }
            rt(|r| r.predicate(t, &n))
        }
        fn predicate_node(t: u32, n: u32) -> u32 {
            if mode() == "explain-trap" {
                return 1;
            }
            rt(|r| r.predicate_node(t, n))
        }
        fn explain(code: u32) -> Reason {
            if mode() == "explain-trap" {
                panic!("faulty plugin: deliberate panic in explain");
            }
            rt(|r| r.explain(code))
        }
    }
    points::predicate::__export_predicate!(Export with_types_in tephra_sdk::points::predicate);

    impl points::node_order::exports::tephra::scheduler::node_order::Guest for Export {
        fn node_score(t: u32, n: u32) -> f64 {
            rt(|r| r.node_score(t, n))
        }
        fn node_order(t: u32, n: Vec<u32>) -> Vec<f64> {
            if mode() == "huge" {
                return vec![1.0; 20_000_000];
            }
            let mut s = rt(|r| r.node_order(t, &n));
            if mode() == "short-scores" {
                s.pop();
            }
            s
        }
    }
    points::node_order::__export_node_order!(Export with_types_in tephra_sdk::points::node_order);

    impl points::overused::exports::tephra::scheduler::overused::Guest for Export {
        fn overused(_q: u32) -> bool {
            gate("overused");
            false
        }
    }
    points::overused::__export_overused!(Export with_types_in tephra_sdk::points::overused);

    impl points::allocatable::exports::tephra::scheduler::allocatable::Guest for Export {
        fn allocatable(_q: u32, _t: u32) -> bool {
            gate("allocatable");
            true
        }
    }
    points::allocatable::__export_allocatable!(Export with_types_in tephra_sdk::points::allocatable);

    impl points::job_ready::exports::tephra::scheduler::job_ready::Guest for Export {
        fn job_ready(_j: u32) -> bool {
            gate("job-ready");
            true
        }
    }
    points::job_ready::__export_job_ready!(Export with_types_in tephra_sdk::points::job_ready);

    impl points::job_enqueueable::exports::tephra::scheduler::job_enqueueable::Guest for Export {
        fn job_enqueueable(_j: u32) -> Vote {
            gate("enqueueable");
            Vote::Abstain
        }
    }
    points::job_enqueueable::__export_job_enqueueable!(Export with_types_in tephra_sdk::points::job_enqueueable);

    impl points::preemptable::exports::tephra::scheduler::preemptable::Guest for Export {
        fn preemptable(p: u32, c: Vec<u32>) -> Victims {
            rt(|r| r.preemptable(p, &c))
        }
    }
    points::preemptable::__export_preemptable!(Export with_types_in tephra_sdk::points::preemptable);
}
