//! The admin surface: a small HTTP/1.1 server (loopback or any address) with
//! health, readiness, Prometheus metrics, the plugin table, and promote /
//! rollback commands. Commands are queued and applied by the scheduling loop
//! between two cycles, so a swap never lands mid-cycle.

use crate::report::QueueRow;
use crate::scheduler::Scheduler;
use anyhow::{anyhow, Result};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request to change plugin versions.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Make the shadow of this plugin live.
    Promote(String),
    /// Put the previous version of this plugin back.
    Rollback(String),
}

type Reply = Sender<Result<String, String>>;

#[derive(Default)]
struct View {
    ready: bool,
    metrics: String,
    plugins: String,
}

/// The running admin server, as the scheduling loop sees it.
pub struct Admin {
    view: Arc<Mutex<View>>,
    commands: Receiver<(Command, Reply)>,
    pub addr: SocketAddr,
}

/// One row of `GET /plugins`.
#[derive(Serialize)]
struct PluginRow {
    name: String,
    version: String,
    hash: String,
    origin: String,
    state: &'static str,
    faults: u64,
    last_error: Option<String>,
}

impl Admin {
    /// Binds `addr` ("127.0.0.1:8080"; port 0 picks one) and serves in the background.
    pub fn serve(addr: &str) -> Result<Admin> {
        let listener = TcpListener::bind(addr).map_err(|e| anyhow!("admin address {addr}: {e}"))?;
        let addr = listener.local_addr()?;
        let view = Arc::new(Mutex::new(View::default()));
        let (tx, rx) = channel();
        let v = view.clone();
        std::thread::Builder::new().name("tephra-admin".into()).spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = handle(stream, &v, &tx);
            }
        })?;
        Ok(Admin { view, commands: rx, addr })
    }

    /// Applies queued commands to the scheduler (call between cycles).
    pub fn apply(&self, sched: &mut Scheduler) {
        for (cmd, reply) in self.commands.try_iter() {
            let r = match &cmd {
                Command::Promote(name) => sched.promote_shadow(name).map(|_| format!("promoted the shadow of {name}")),
                Command::Rollback(name) => sched.rollback(name).map(|_| format!("rolled {name} back")),
            };
            // The table reflects the change before the caller hears back.
            let plugins = serde_json::to_string_pretty(&plugin_rows(sched)).unwrap_or_default();
            self.view.lock().unwrap_or_else(|e| e.into_inner()).plugins = plugins;
            let _ = reply.send(r.map_err(|e| e.to_string()));
        }
    }

    /// Publishes the scheduler's state after a cycle.
    pub fn update(&self, sched: &Scheduler, queues: &[QueueRow]) {
        let metrics = metrics(sched, queues);
        let plugins = serde_json::to_string_pretty(&plugin_rows(sched)).unwrap_or_default();
        let mut v = self.view.lock().unwrap_or_else(|e| e.into_inner());
        v.ready = true;
        v.metrics = metrics;
        v.plugins = plugins;
    }
}

impl Admin {
    /// Like [`Admin::update`], with more metric lines (Prometheus text) appended.
    pub fn update_with(&self, sched: &Scheduler, queues: &[QueueRow], extra: &str) {
        self.update(sched, queues);
        self.view.lock().unwrap_or_else(|e| e.into_inner()).metrics.push_str(extra);
    }
}

fn plugin_rows(sched: &Scheduler) -> Vec<PluginRow> {
    let mut rows = Vec::new();
    let row = |p: &crate::wasm::WasmPlugin, state: &'static str| {
        use crate::plugin::Backend;
        let name = p.info().name.clone();
        PluginRow {
            version: p.info().version.clone(),
            hash: p.hash().to_string(),
            origin: p.origin().to_string(),
            state,
            faults: sched.stats.plugins.get(&name).map_or(0, |s| s.2),
            last_error: sched.last_errors.get(&name).cloned(),
            name,
        }
    };
    for name in sched.library.names() {
        if let Some(p) = sched.library.get(name) {
            rows.push(row(p, "live"));
        }
        for p in sched.library.previous(name).iter().rev() {
            rows.push(row(p, "previous"));
        }
    }
    for p in sched.shadows.values() {
        rows.push(row(p, "shadow"));
    }
    rows
}

/// Prometheus text exposition of the scheduler's counters and queue figures.
pub fn metrics(sched: &Scheduler, queues: &[QueueRow]) -> String {
    let s = &sched.stats;
    let mut m = String::new();
    let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, f64)>| {
        let _ = writeln!(m, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(m, "{name}{labels} {v}");
        }
    };
    let one = |v: f64| vec![(String::new(), v)];
    family("tephra_cycles_total", "counter", "Scheduling cycles run.", one(s.cycles as f64));
    family("tephra_cycle_seconds_total", "counter", "Time spent in cycles.", one(s.cycle_seconds_sum));
    family("tephra_cycle_last_seconds", "gauge", "Duration of the latest cycle.", one(s.last_cycle.as_secs_f64()));
    let per = |f: &dyn Fn(&(u64, f64)) -> f64| -> Vec<(String, f64)> {
        s.actions.iter().map(|(a, v)| (format!("{{action=\"{a}\"}}"), f(v))).collect()
    };
    family("tephra_action_runs_total", "counter", "Action runs.", per(&|v| v.0 as f64));
    family("tephra_action_seconds_total", "counter", "Time spent per action.", per(&|v| v.1));
    let plug = |f: &dyn Fn(&(u64, f64, u64)) -> f64| -> Vec<(String, f64)> {
        s.plugins.iter().map(|(p, v)| (format!("{{plugin=\"{p}\"}}"), f(v))).collect()
    };
    family("tephra_plugin_calls_total", "counter", "Extension-point calls per plugin.", plug(&|v| v.0 as f64));
    family("tephra_plugin_call_seconds_total", "counter", "Time in plugin calls.", plug(&|v| v.1));
    family("tephra_plugin_faults_total", "counter", "Cycles in which the plugin faulted.", plug(&|v| v.2 as f64));
    family("tephra_binds_total", "counter", "Pods bound.", one(s.binds as f64));
    family("tephra_evictions_total", "counter", "Pods evicted.", one(s.evictions as f64));
    family("tephra_plugin_swaps_total", "counter", "Plugin versions promoted.", one(s.swaps as f64));
    family("tephra_plugin_rollbacks_total", "counter", "Plugin versions rolled back.", one(s.rollbacks as f64));
    family(
        "tephra_shadow_diffs_total",
        "counter",
        "Decisions a shadow plugin would change.",
        one(s.shadow_diffs as f64),
    );
    let res = |f: &dyn Fn(&QueueRow) -> Option<&crate::resource::ResourceList>| -> Vec<(String, f64)> {
        queues
            .iter()
            .flat_map(|q| {
                f(q).into_iter().flatten().map(move |(r, v)| (format!("{{queue=\"{}\",resource=\"{r}\"}}", q.name), *v))
            })
            .collect()
    };
    family(
        "tephra_queue_allocated",
        "gauge",
        "Resources allocated per queue (internal units).",
        res(&|q| Some(&q.allocated)),
    );
    family("tephra_queue_deserved", "gauge", "Deserved resources per queue.", res(&|q| q.deserved.as_ref()));
    let shares = queues.iter().filter_map(|q| Some((format!("{{queue=\"{}\"}}", q.name), q.share?))).collect();
    family("tephra_queue_share", "gauge", "Queue share (allocated / deserved).", shares);
    m
}

fn handle(stream: TcpStream, view: &Arc<Mutex<View>>, commands: &Sender<(Command, Reply)>) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    // Drain the headers; no request here has a body tephra reads.
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, kind, body) = route(method, path, view, commands);
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

fn route(
    method: &str,
    path: &str,
    view: &Arc<Mutex<View>>,
    commands: &Sender<(Command, Reply)>,
) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    let v = || view.lock().unwrap_or_else(|e| e.into_inner());
    match (method, path) {
        ("GET", "/healthz") => ("200 OK", TEXT, "ok\n".into()),
        ("GET", "/readyz") if v().ready => ("200 OK", TEXT, "ready\n".into()),
        ("GET", "/readyz") => ("503 Service Unavailable", TEXT, "no cycle has completed yet\n".into()),
        ("GET", "/metrics") => ("200 OK", "text/plain; version=0.0.4", v().metrics.clone()),
        ("GET", "/plugins") => ("200 OK", "application/json", v().plugins.clone()),
        ("POST", p) if p.starts_with("/plugins/") => {
            let rest = &p["/plugins/".len()..];
            let cmd = match rest.rsplit_once('/') {
                Some((name, "promote")) => Command::Promote(name.to_string()),
                Some((name, "rollback")) => Command::Rollback(name.to_string()),
                _ => return ("404 Not Found", TEXT, "use POST /plugins/NAME/promote or /rollback\n".into()),
            };
            let (tx, rx) = channel();
            if commands.send((cmd, tx)).is_err() {
                return ("503 Service Unavailable", TEXT, "the scheduler is not running\n".into());
            }
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(Ok(msg)) => ("200 OK", TEXT, msg + "\n"),
                Ok(Err(e)) => ("409 Conflict", TEXT, e + "\n"),
                Err(_) => ("504 Gateway Timeout", TEXT, "no cycle boundary within 30s\n".into()),
            }
        }
        _ => ("404 Not Found", TEXT, "not found\n".into()),
    }
}
