//! The admin surface: a small HTTP/1.1 server (loopback or any address) with
//! health, readiness, Prometheus metrics, the plugin table, and promote /
//! rollback commands. It talks to the loop through a
//! [`Handle`](crate::scheduler::control::Handle): commands are applied between
//! two cycles, so a swap never lands mid-cycle; the state it serves is what the
//! loop published after its latest cycle.

use crate::resource::ResourceList;
use crate::scheduler::control::{Command, Handle, QueueRow, Status};
use anyhow::{anyhow, Result};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Binds `addr` ("127.0.0.1:8080"; port 0 picks one) and serves `handle` in
/// the background; returns the address bound.
pub fn serve(addr: &str, handle: Handle) -> Result<SocketAddr> {
    let listener = TcpListener::bind(addr).map_err(|e| anyhow!("admin address {addr}: {e}"))?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new().name("tephra-admin".into()).spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = serve_one(stream, &handle);
        }
    })?;
    Ok(bound)
}

/// A label value escaped as the Prometheus text format requires: a queue
/// named `a"} 1\nfake 2` stays one label, not a forged sample.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Prometheus text exposition of the published counters and queue figures.
pub fn metrics(status: &Status) -> String {
    let (s, queues) = (&status.stats, &status.queues);
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
        s.actions.iter().map(|(a, v)| (format!("{{action=\"{}\"}}", esc(a)), f(v))).collect()
    };
    family("tephra_action_runs_total", "counter", "Action runs.", per(&|v| v.0 as f64));
    family("tephra_action_seconds_total", "counter", "Time spent per action.", per(&|v| v.1));
    let plug = |f: &dyn Fn(&(u64, f64, u64)) -> f64| -> Vec<(String, f64)> {
        s.plugins.iter().map(|(p, v)| (format!("{{plugin=\"{}\"}}", esc(p)), f(v))).collect()
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
    let res = |f: &dyn Fn(&QueueRow) -> Option<&ResourceList>| -> Vec<(String, f64)> {
        queues
            .iter()
            .flat_map(|q| {
                f(q).into_iter()
                    .flatten()
                    .map(move |(r, v)| (format!("{{queue=\"{}\",resource=\"{}\"}}", esc(&q.name), esc(r)), *v))
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
    let shares = queues.iter().filter_map(|q| Some((format!("{{queue=\"{}\"}}", esc(&q.name)), q.share?))).collect();
    family("tephra_queue_share", "gauge", "Queue share (allocated / deserved).", shares);
    let diffs = s
        .shadow_diffs_by
        .iter()
        .map(|((plugin, kind), n)| (format!("{{plugin=\"{}\",kind=\"{}\"}}", esc(plugin), esc(kind)), *n as f64))
        .collect();
    family(
        "tephra_shadow_decision_diffs_total",
        "counter",
        "Decisions a shadow plugin would change, by plugin and kind.",
        diffs,
    );
    // The driver's own figures (leadership, API writes).
    for f in &status.figures {
        family(f.name, if f.counter { "counter" } else { "gauge" }, f.help, one(f.value));
    }
    m
}

fn serve_one(stream: TcpStream, handle: &Handle) -> std::io::Result<()> {
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
    let (status, kind, body) = route(method, path, handle);
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}

fn route(method: &str, path: &str, handle: &Handle) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    let v = || handle.status();
    match (method, path) {
        ("GET", "/healthz") => ("200 OK", TEXT, "ok\n".into()),
        ("GET", "/readyz") if v().ready => ("200 OK", TEXT, "ready\n".into()),
        ("GET", "/readyz") => ("503 Service Unavailable", TEXT, "no cycle has completed yet\n".into()),
        ("GET", "/metrics") => ("200 OK", "text/plain; version=0.0.4", metrics(&v())),
        ("GET", "/plugins") => {
            ("200 OK", "application/json", serde_json::to_string_pretty(&v().plugins).unwrap_or_default())
        }
        ("POST", p) if p.starts_with("/plugins/") => {
            let rest = &p["/plugins/".len()..];
            let cmd = match rest.rsplit_once('/') {
                Some((name, "promote")) => Command::Promote(name.to_string()),
                Some((name, "rollback")) => Command::Rollback(name.to_string()),
                _ => return ("404 Not Found", TEXT, "use POST /plugins/NAME/promote or /rollback\n".into()),
            };
            let Some(rx) = handle.send(cmd) else {
                return ("503 Service Unavailable", TEXT, "the scheduler is not running\n".into());
            };
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(Ok(msg)) => ("200 OK", TEXT, msg + "\n"),
                Ok(Err(e)) => ("409 Conflict", TEXT, e + "\n"),
                Err(_) => ("504 Gateway Timeout", TEXT, "no cycle boundary within 30s\n".into()),
            }
        }
        _ => ("404 Not Found", TEXT, "not found\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names from manifests or plugins cannot forge samples.
    #[test]
    fn label_values_are_escaped() {
        assert_eq!(esc(r#"a"} 1"#), r#"a\"} 1"#);
        assert_eq!(esc("q\nfake_metric 2"), "q\\nfake_metric 2");
        assert_eq!(esc("back\\slash"), "back\\\\slash");
        let mut status = Status::default();
        status.queues.push(QueueRow { name: "q\"}\nforged 1".into(), share: Some(0.5), ..Default::default() });
        let text = metrics(&status);
        assert!(!text.lines().any(|l| l.starts_with("forged")), "{text}");
        assert!(text.contains("tephra_queue_share{queue=\"q\\\"}\\nforged 1\"} 0.5"), "{text}");
    }
}
