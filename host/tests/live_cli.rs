//! The long-running simulator: shadows printed, a plugin file swapped by the
//! directory watcher between cycles, and the admin HTTP surface on loopback.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tephra::wasm::builtin::FIXTURES_DIR;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn swap_fixture(v: &str) -> PathBuf {
    Path::new(FIXTURES_DIR).join("swap").join(format!("prefer-{v}.wasm"))
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tephra-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn shadow_diff_is_printed_and_never_applied() {
    let out = Command::new(env!("CARGO_BIN_EXE_tephra"))
        .current_dir(repo())
        .args(["simulate", "examples/shadow/cluster.yaml", "--plugin"])
        .arg(swap_fixture("first"))
        .arg("--shadow")
        .arg(swap_fixture("last"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.matches("bind       apps/web-").count(), 12, "{text}");
    assert!(!text.contains("→ rack-b\n  phase"), "the shadow's choices are not applied:\n{text}");
    for i in 0..12 {
        assert!(text.contains(&format!("bind       apps/web-{i} → rack-a")), "{text}");
        assert!(
            text.contains(&format!("shadow     prefer would place apps/web-{i}: live rack-a, shadow rack-b")),
            "{text}"
        );
    }
}

#[test]
fn watcher_swaps_a_changed_plugin_between_cycles() {
    let dir = tmpdir("watch");
    std::fs::copy(swap_fixture("first"), dir.join("prefer.wasm")).unwrap();
    // A bad file present at start-up is skipped with its reason, not a failed start.
    std::fs::write(dir.join("broken.wasm"), b"not a component either").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tephra"))
        .current_dir(repo())
        .args([
            "simulate",
            "examples/shadow/cluster.yaml",
            "--watch",
            "--period",
            "0.4",
            "--cycles",
            "12",
            "--plugins-dir",
        ])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = String::new();
    // After a few cycles, a new version replaces the file.
    while let Some(Ok(l)) = lines.next() {
        seen.push_str(&l);
        seen.push('\n');
        if l.starts_with("── cycle 4") {
            let tmp = dir.join("prefer.wasm.tmp");
            std::fs::copy(swap_fixture("last"), &tmp).unwrap();
            std::fs::rename(&tmp, dir.join("prefer.wasm")).unwrap();
        }
        if l.starts_with("── cycle 6") {
            // The start-up name rule holds for the watcher too.
            std::fs::copy(swap_fixture("first"), dir.join("other.wasm")).unwrap();
        }
        if l.starts_with("── cycle 8") {
            std::fs::write(dir.join("junk.wasm"), b"not a component").unwrap();
        }
    }
    assert!(child.wait().unwrap().success());
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("error: plugin file skipped: ") && err.contains("broken.wasm: "), "{err}");
    assert!(seen.contains("plugins    swapped plugin prefer to version"), "{seen}");
    let swap_at = seen.find("swapped plugin prefer").unwrap();
    let (before, after) = seen.split_at(swap_at);
    assert!(before.contains("→ rack-a") && !before.contains("→ rack-b"), "{before}");
    let after_binds: Vec<&str> = after.lines().filter(|l| l.contains("bind       ")).collect();
    assert!(!after_binds.is_empty() && after_binds.iter().all(|l| l.ends_with("→ rack-b")), "{after}");
    // A broken file in the directory is rejected; the running version stays.
    assert!(
        after.contains("plugins    rejected ") && after.contains("junk.wasm: not a loadable WebAssembly component"),
        "{after}"
    );
    assert!(after.contains("other.wasm: the component calls itself \"prefer\"; name the file prefer.wasm"), "{after}");
    let last_bind = after.lines().rev().find(|l| l.contains("bind       ")).unwrap();
    assert!(last_bind.ends_with("→ rack-b"), "{after}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn http(addr: &str, method: &str, path: &str) -> (u16, String) {
    http_as(addr, method, path, None)
}

/// One request, with `token` as its bearer token.
fn http_as(addr: &str, method: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Length: 0\r\n\r\n").unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).unwrap();
    let code = buf.split_whitespace().nth(1).unwrap_or("0").parse().unwrap_or(0);
    let body = buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

/// The simulator with a live and a shadow version of `prefer` and the
/// admin surface (more arguments after); its address.
fn admin_simulation(extra: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tephra"))
        .current_dir(repo())
        .args(["simulate", "examples/shadow/cluster.yaml", "--admin", "127.0.0.1:0", "--realtime"])
        .args(["--period", "0.3", "--cycles", "200", "--plugin"])
        .arg(swap_fixture("first"))
        .arg("--shadow")
        .arg(swap_fixture("last"))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    // The address line, after whatever was logged before it.
    let mut said = String::new();
    let addr = loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            panic!("no admin address in:\n{said}");
        }
        if let Some(a) = line.trim().strip_prefix("admin: listening on http://") {
            break a.to_string();
        }
        said.push_str(&line);
    };
    // Keep reading stderr (and stdout) so the child never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let mut out = child.stdout.take().unwrap();
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while http(&addr, "GET", "/readyz").0 != 200 {
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, addr)
}

/// (version, state) of each version of `prefer` in the plugin table.
fn prefer_versions(addr: &str) -> Vec<(String, String)> {
    let (code, plugins) = http(addr, "GET", "/plugins");
    assert_eq!(code, 200);
    let rows: serde_json::Value = serde_json::from_str(&plugins).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "prefer")
        .map(|r| (r["version"].as_str().unwrap().to_string(), r["state"].as_str().unwrap().to_string()))
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn admin_serves_health_metrics_plugins_and_promotes_with_the_token() {
    let dir = tmpdir("admin-token");
    let token_file = dir.join("token");
    std::fs::write(&token_file, "a-long-admin-token\n").unwrap();
    let (mut child, addr) = admin_simulation(&["--admin-token-file", token_file.to_str().unwrap()]);
    assert_eq!(http(&addr, "GET", "/healthz"), (200, "ok\n".into()));
    let (code, metrics) = http(&addr, "GET", "/metrics");
    assert_eq!(code, 200);
    for want in [
        "# TYPE tephra_cycles_total counter",
        "tephra_plugin_calls_total{plugin=\"prefer\"}",
        "tephra_action_seconds_total{action=\"allocate\"}",
        "tephra_queue_allocated{queue=\"default\",resource=\"cpu\"}",
        "tephra_shadow_diffs_total",
        // Volcano's names, labels and units, for its dashboards.
        "# TYPE volcano_e2e_scheduling_latency_milliseconds histogram",
        "volcano_e2e_scheduling_latency_milliseconds_bucket{le=\"1\"}",
        "volcano_action_scheduling_latency_milliseconds_count{action=\"allocate\"}",
        "volcano_plugin_scheduling_latency_milliseconds_count{OnSession=\"OnSessionOpen\",plugin=\"prefer\"}",
        "volcano_open_session_duration_milliseconds_count",
        "volcano_e2e_job_scheduling_latency_milliseconds_count",
        "volcano_queue_allocated_milli_cpu{queue_name=\"default\"}",
        "volcano_queue_allocated_memory_bytes{queue_name=\"default\"}",
        "volcano_queue_request_milli_cpu{queue_name=\"default\"}",
        "volcano_queue_weight{queue_name=\"default\"} 1",
        "# TYPE volcano_total_preemption_attempts counter",
        "volcano_unschedule_job_count",
    ] {
        assert!(metrics.contains(want), "missing {want} in:\n{metrics}");
    }
    // Some cycle placed something: the job latency histogram has samples.
    let placed = metrics
        .lines()
        .find_map(|l| l.strip_prefix("volcano_e2e_job_scheduling_latency_milliseconds_count "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(placed.is_some_and(|n| n > 0.0), "{metrics}");
    let before = pairs(&[("first", "live"), ("last", "shadow")]);
    let states = prefer_versions(&addr);
    assert!(before.iter().all(|x| states.contains(x)), "{states:?}");
    // Without the token, or with another, nothing changes.
    let (code, body) = http(&addr, "POST", "/plugins/prefer/promote");
    assert_eq!(code, 401, "{body}");
    let (code, body) = http_as(&addr, "POST", "/plugins/prefer/promote", Some("a-long-admin-tokeN"));
    assert_eq!(code, 401, "{body}");
    let (code, _) = http_as(&addr, "POST", "/plugins/prefer/rollback", Some("wrong"));
    assert_eq!(code, 401);
    std::thread::sleep(Duration::from_millis(700));
    let states = prefer_versions(&addr);
    assert!(before.iter().all(|x| states.contains(x)), "refused requests changed the table: {states:?}");
    // With it, the shadow goes live.
    let token = Some("a-long-admin-token");
    assert_eq!(http_as(&addr, "POST", "/plugins/prefer/promote", token).0, 200);
    assert_eq!(prefer_versions(&addr), pairs(&[("last", "live"), ("first", "previous")]));
    let (code, body) = http_as(&addr, "POST", "/plugins/prefer/promote", token);
    assert_eq!(code, 409, "no shadow left: {body}");
    assert_eq!(http_as(&addr, "POST", "/plugins/prefer/rollback", token).0, 200);
    assert_eq!(http(&addr, "GET", "/nope").0, 404);
    child.kill().unwrap();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

/// With no authentication configured there is no open door: promote and
/// rollback are refused to everyone.
#[test]
fn admin_without_authentication_refuses_every_change() {
    let (mut child, addr) = admin_simulation(&[]);
    for token in [None, Some("anything")] {
        for verb in ["promote", "rollback"] {
            let (code, body) = http_as(&addr, "POST", &format!("/plugins/prefer/{verb}"), token);
            assert_eq!(code, 403, "{body}");
            assert!(body.contains("no admin authentication is configured"), "{body}");
        }
    }
    let states = prefer_versions(&addr);
    assert!(pairs(&[("first", "live"), ("last", "shadow")]).iter().all(|x| states.contains(x)), "{states:?}");
    child.kill().unwrap();
    let _ = child.wait();
}

/// A client trickling its request head, another sending a huge header and
/// a crowd of idle connections neither stall the surface for others nor
/// the scheduling loop; the trickler is cut off after the head timeout.
#[test]
fn slow_or_malformed_clients_do_not_stall_the_admin_surface() {
    let (mut child, addr) = admin_simulation(&[]);
    let cycles = |addr: &str| -> f64 {
        let (_, m) = http(addr, "GET", "/metrics");
        m.lines().find_map(|l| l.strip_prefix("tephra_cycles_total ")).and_then(|v| v.parse().ok()).unwrap_or(-1.0)
    };
    let mut trickler = TcpStream::connect(&addr).unwrap();
    write!(trickler, "GET /healthz HTTP/1.1\r\nHost: x\r\n").unwrap();
    let idle: Vec<TcpStream> = (0..50).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    let mut huge = TcpStream::connect(&addr).unwrap();
    let _ = write!(huge, "GET /healthz HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(1 << 20));
    let started = Instant::now();
    let first = cycles(&addr);
    while started.elapsed() < Duration::from_secs(3) {
        let t = Instant::now();
        assert_eq!(http(&addr, "GET", "/healthz").0, 200);
        assert!(t.elapsed() < Duration::from_secs(1), "healthz took {:?}", t.elapsed());
        let _ = trickler.write_all(b"X");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(cycles(&addr) > first, "the loop went on scheduling");
    // The oversized head is refused, not buffered.
    huge.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answer = String::new();
    let _ = huge.read_to_string(&mut answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 431"), "{answer}");
    // The trickler is cut off once the head timeout passes.
    trickler.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut rest = Vec::new();
    let cut = Instant::now();
    let _ = trickler.read_to_end(&mut rest);
    assert!(cut.elapsed() < Duration::from_secs(9), "the trickler was never cut off");
    drop(idle);
    child.kill().unwrap();
    let _ = child.wait();
}

#[test]
fn watched_config_edits_apply_between_cycles_and_bad_edits_are_refused() {
    let dir = tmpdir("config");
    let config = dir.join("scheduler.yaml");
    let with = |plugin: &str| {
        format!("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n  - name: predicates\n  - name: {plugin}\n")
    };
    std::fs::write(&config, with("prefer")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tephra"))
        .current_dir(repo())
        .args(["simulate", "examples/shadow/cluster.yaml", "--watch", "--period", "0.4", "--cycles", "12", "--config"])
        .arg(&config)
        .arg("--plugin")
        .arg(swap_fixture("last"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = String::new();
    for l in BufReader::new(child.stdout.take().unwrap()).lines() {
        let l = l.unwrap();
        if l.starts_with("── cycle 3") {
            std::fs::write(&config, "actions: \"enqueue, teleport\"\n").unwrap();
        }
        if l.starts_with("── cycle 6") {
            std::fs::write(&config, with("binpack")).unwrap();
        }
        seen.push_str(&l);
        seen.push('\n');
    }
    assert!(child.wait().unwrap().success());
    let refused = seen.find("kept the previous config").unwrap_or_else(|| panic!("{seen}"));
    assert!(seen[refused..].contains("unknown action \"teleport\""), "{seen}");
    let reloaded = seen.find("plugins    reloaded").unwrap_or_else(|| panic!("{seen}"));
    assert!(refused < reloaded, "{seen}");
    // Scheduling went on through both edits; prefer (last) decided before the reload.
    let before: Vec<&str> = seen[..reloaded].lines().filter(|l| l.contains("bind       ")).collect();
    assert!(!before.is_empty() && before.iter().all(|l| l.ends_with("→ rack-b")), "{seen}");
    assert!(seen[reloaded..].contains("bind       "), "{seen}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a plugin says reaches the log and the report as one bounded line:
/// no forged lines, no 20 MB log lines, no 50 MB fault printed again and
/// again.
#[test]
fn plugin_text_is_one_bounded_line() {
    let dir = tmpdir("forge");
    for mode in ["forge", "huge-fault"] {
        let conf = dir.join(format!("{mode}.yaml"));
        let text = format!(
            "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: faulty\n    faultPolicy: skip\n    arguments: {{mode: {mode}}}\n  - name: predicates\n"
        );
        std::fs::write(&conf, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_tephra"))
            .current_dir(repo())
            .env("RUST_LOG", "info")
            .args(["simulate", "--cycles", "3", "--plugins-dir", FIXTURES_DIR, "--config"])
            .arg(&conf)
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{mode}: {}", &stderr[..stderr.len().min(2000)]);
        for (what, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            assert!(text.len() < 1 << 20, "{mode}: {what} holds {} bytes", text.len());
            let forged = text.lines().find(|l| l.trim_start().starts_with("ERROR forged"));
            assert!(forged.is_none(), "{mode}: a forged {what} line: {forged:?}");
        }
        if mode == "forge" {
            assert!(stderr.contains("looks fine\\nERROR forged by a plugin"), "{stderr}");
            assert!(stderr.contains("more bytes)"), "a 20 MB line is cut: {}", &stderr[..stderr.len().min(2000)]);
        } else {
            let fault = stdout.lines().find(|l| l.contains("faulty open-session")).expect("the fault in the report");
            assert!(fault.contains("refused\\nERROR forged fault line\\n") && fault.contains("more bytes)"), "{fault}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The config's `limits:` reach the sandbox: a plugin spending 300 ms per
/// cycle faults under `cycleBudget: 100ms` and not under the default.
#[test]
fn configured_limits_apply() {
    let dir = tmpdir("limits");
    let conf = |limits: &str| {
        let f = dir.join(format!("c{}.yaml", limits.len()));
        let text = format!(
            "actions: \"enqueue, allocate\"\n{limits}tiers:\n- plugins:\n  - name: faulty\n    faultPolicy: skip\n    arguments: {{mode: slow}}\n  - name: predicates\n"
        );
        std::fs::write(&f, text).unwrap();
        f
    };
    let run = |c: PathBuf| {
        let out = Command::new(env!("CARGO_BIN_EXE_tephra"))
            .current_dir(repo())
            .args(["simulate", "--cycles", "1", "--plugins-dir", FIXTURES_DIR, "--config"])
            .arg(c)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let tight = run(conf("limits:\n  cycleBudget: 100ms\n"));
    assert!(tight.contains("over its budget of 100ms"), "{tight}");
    let default = run(conf(""));
    assert!(!default.contains("over its budget"), "{default}");
    let _ = std::fs::remove_dir_all(&dir);
}
