//! The policy lab end to end: the walkthrough compared under proportion and
//! capacity (`./dev lab`), its figures, its report opened in a real headless
//! Chromium, and trace conversion from the Alibaba 2020 tables.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn tephra(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tephra")).args(args).current_dir(root()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tephra-lab-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The comparison `./dev lab` makes, into `dir`.
fn walkthrough(dir: &Path) -> (Value, PathBuf) {
    let html = dir.join("report.html");
    let (code, out, err) = tephra(&[
        "simulate",
        "examples/lab/cluster.yaml",
        "examples/lab/walkthrough.csv",
        "--compare",
        "examples/lab/proportion.yaml",
        "--compare",
        "examples/lab/capacity.yaml",
        "--report",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("proportion: ") && out.contains("capacity: "), "{out}");
    assert!(err.contains("capacity: 100% of arrivals"), "progress lines when not on a terminal: {err}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    (json, html)
}

/// Both variants run the same 120 jobs to the end; the test team (three
/// times the share) waits far less than the default team; every eviction
/// is a reclaim; the charts' series are there.
#[test]
fn walkthrough_compares_proportion_and_capacity() {
    let dir = scratch("figures");
    let (json, _) = walkthrough(&dir);
    let variants = json["variants"].as_array().unwrap();
    let names: Vec<&str> = variants.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["proportion", "capacity"]);
    for v in variants {
        let (all, q) = (&v["overall"], &v["queues"]);
        assert_eq!(
            (all["jobs"].as_u64(), all["finished"].as_u64(), all["still_waiting"].as_u64()),
            (Some(120), Some(120), Some(0)),
            "{v}"
        );
        assert_eq!((q["default"]["jobs"].as_u64(), q["test"]["jobs"].as_u64()), (Some(48), Some(72)));
        let p90 = |queue: &str| q[queue]["p90"].as_f64().unwrap();
        assert!(p90("test") * 4.0 < p90("default"), "{v}");
        let kinds: Vec<&String> = all["evictions"].as_object().unwrap().keys().collect();
        assert_eq!(kinds, ["reclaim"], "{v}");
        assert!(all["evictions"]["reclaim"].as_u64().unwrap() > 0);
        let cpu = v["mean_utilisation"]["cpu"].as_f64().unwrap();
        assert!(cpu > 0.5 && cpu <= 1.0, "{cpu}");
        for queue in ["default", "test"] {
            assert!(v["share"][queue].as_array().unwrap().len() > 10, "{queue}: {v}");
        }
        // Makespan: from the first submission to the last completion.
        assert!(v["makespan"].as_f64().unwrap() > 14.0 * 3600.0);
    }
    // Capacity lends test's unused share to default and takes it back by
    // reclaim; proportion's shares follow demand, so test never gives back.
    assert_eq!(variants[0]["queues"]["test"]["evictions"].as_object().unwrap().len(), 0);
    assert!(variants[1]["queues"]["test"]["evictions"]["reclaim"].as_u64().unwrap() > 0);
}

/// The report opens in headless Chromium (Debian's package, installed by
/// `./dev setup`) and its charts are drawn: the screenshot holds many
/// pixels of each variant's line colour.
#[test]
fn report_charts_render_in_headless_chromium() {
    let dir = scratch("browser");
    let (_, html) = walkthrough(&dir);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.matches("<svg").count() >= 6, "charts inline");
    // Nothing is fetched: no scripts, no remote sources.
    assert!(!page.contains("<script") && !page.contains("src=\"http") && !page.contains("href=\"http"));
    let shot = dir.join("shot.png");
    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .expect("chromium is not installed: `./dev setup` installs Debian's chromium package");
    let out = Command::new(chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1000,4000",
            &format!("--screenshot={}", shot.display()),
            &format!("file://{}", html.display()),
        ])
        .output()
        .unwrap();
    assert!(shot.exists(), "no screenshot: {}", String::from_utf8_lossy(&out.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let count = |rgb: (u8, u8, u8)| {
        buf[..info.buffer_size()]
            .chunks(px)
            .filter(|p| {
                let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).abs();
                d(p[0], rgb.0) + d(p[1], rgb.1) + d(p[2], rgb.2) < 24
            })
            .count()
    };
    for (i, c) in tephra::lab::html::COLOURS[..2].iter().enumerate() {
        let n = count((c.0, c.1, c.2));
        // The swatches and legends alone are a few hundred pixels; lines and bars are thousands.
        assert!(n > 3000, "variant {i}'s colour covers only {n} pixels of the screenshot {}", shot.display());
    }
}

/// Backfill in the lab (issue 33): the day of examples/lab/backfill with and
/// without EASY backfill. The big gang starts at the same moment; with
/// backfill the cluster is busier, the day ends sooner and small jobs wait
/// less; the report charts both.
#[test]
fn backfill_gains_utilisation_and_keeps_the_big_jobs_start() {
    let dir = scratch("backfill");
    let html = dir.join("backfill.html");
    let (code, _, err) = tephra(&[
        "simulate",
        "examples/lab/backfill/cluster.yaml",
        "examples/lab/backfill/trace.csv",
        "--compare",
        "examples/lab/backfill/off.yaml",
        "--compare",
        "examples/lab/backfill/easy.yaml",
        "--report",
        html.to_str().unwrap(),
        "--period",
        "10",
    ]);
    assert_eq!(code, 0, "{err}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("backfill.json")).unwrap()).unwrap();
    let v = json["variants"].as_array().unwrap();
    assert_eq!((v[0]["name"].as_str(), v[1]["name"].as_str()), (Some("off"), Some("easy")));
    for x in v {
        assert_eq!(x["overall"]["finished"], x["overall"]["jobs"], "{x}");
        assert_eq!(x["queues"]["big"]["jobs"].as_u64(), Some(1));
    }
    let f = |i: usize, path: &[&str]| path.iter().fold(&v[i], |x, k| &x[*k]).as_f64().unwrap();
    // The gang waits exactly as long (to the second) with backfill.
    let big = f(0, &["queues", "big", "max"]);
    assert!(big > 3600.0, "the gang waited {big}s: it should have to wait for the nodes to drain");
    assert_eq!(f(1, &["queues", "big", "max"]), big);
    // More of the cluster in use, an earlier end, shorter small-job waits.
    let (off, easy) = (f(0, &["mean_utilisation", "cpu"]), f(1, &["mean_utilisation", "cpu"]));
    assert!(easy > off + 0.01, "cpu in use: off {off}, easy {easy}");
    assert!(f(1, &["makespan"]) < f(0, &["makespan"]));
    assert!(f(1, &["queues", "small", "p50"]) < f(0, &["queues", "small", "p50"]));
    let page = std::fs::read_to_string(&html).unwrap();
    for chart in ["cpu in use", "longest wait per queue"] {
        assert!(page.contains(chart), "no chart {chart:?} in the report");
    }
}

/// The Alibaba GPU trace of 2020, in its own columns (files written here in
/// that layout): jobs become gangs of all their instances, submitted at the
/// job's start, running as long as the longest task, asking for the largest
/// request, GPUs rounded up; tasks without times are left out.
#[test]
fn alibaba_2020_tables_convert_to_a_trace() {
    let dir = root().join("tests/traces/alibaba-gpu-2020");
    let (code, out, err) = tephra(&["trace", "alibaba", dir.to_str().unwrap(), "--queue-by", "gpu-type"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("4 jobs; 1 task rows left out"), "{err}");
    let expected = std::fs::read_to_string(dir.join("expected.csv")).unwrap();
    assert_eq!(out, expected);
    // The converted trace replays.
    let trace = scratch("alibaba").join("trace.csv");
    std::fs::write(&trace, &out).unwrap();
    let (code, out, err) = tephra(&["simulate", "tests/traces/alibaba-gpu-2020/cluster.yaml", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches(" → Completed").count(), 4, "{out}");
}

/// A trace's mistakes are one line naming the file, line, job and column.
#[test]
fn a_bad_trace_names_its_line_and_column() {
    let dir = scratch("bad");
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, "job,submit,duration,tasks\nok,0,10,1\nbroken,5,10,zero\n").unwrap();
    let (code, _, err) = tephra(&["simulate", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        format!("error: {}:3: job broken: column tasks: expected a whole number, got \"zero\"", bad.display())
    );
}
