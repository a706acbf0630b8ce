//! The Alibaba GPU cluster trace of 2020 (`cluster-trace-gpu-v2020`,
//! Weng et al., NSDI '22) as a tephra trace. Two of its tables are read:
//!
//! - `pai_job_table.csv`: job_name, inst_id, user, status, start_time, end_time
//! - `pai_task_table.csv`: job_name, task_name, inst_num, status, start_time,
//!   end_time, plan_cpu, plan_mem, plan_gpu, gpu_type
//!
//! Times are seconds; `plan_cpu` is percent of a core (600 = 6 cores),
//! `plan_mem` GB, `plan_gpu` percent of a GPU (50 = half). The published
//! files have no header row (a first row naming `job_name` is skipped).
//!
//! A job becomes one trace row: submitted at its job-table start (else its
//! first task's), running as long as its longest task, with all its tasks'
//! instances as one gang, each asking for the largest request of its tasks
//! (GPUs rounded up to whole devices, as Kubernetes counts them). Tasks
//! without both times, or ending before they start, are left out and counted.

use super::TraceJob;
use anyhow::{anyhow, bail, Result};
use std::collections::{BTreeMap, HashMap};

/// How jobs map to queues.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueBy {
    /// Every job in one queue (`--queue`).
    One,
    /// A queue per user.
    User,
    /// A queue per GPU model (`v100`, `t4`, …; `misc` when unset).
    GpuType,
}

/// What a conversion made and left out.
#[derive(Debug, Default)]
pub struct Converted {
    /// The jobs made.
    pub jobs: Vec<TraceJob>,
    /// Task rows left out (no times, or ending before they start).
    pub skipped_tasks: usize,
}

struct Task {
    instances: u32,
    start: f64,
    end: f64,
    cpu: f64,
    mem_gb: f64,
    gpu: f64,
    gpu_type: String,
}

fn rows(text: &str, origin: &str, columns: usize) -> Result<Vec<(usize, Vec<String>)>> {
    let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| anyhow!("{origin}: {e}"))?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        if rec.get(0) == Some("job_name") {
            continue;
        }
        if rec.len() < columns {
            bail!("{origin}:{line}: expected {columns} columns, found {}", rec.len());
        }
        out.push((line, rec.iter().map(|s| s.trim().to_string()).collect()));
    }
    Ok(out)
}

fn number(origin: &str, line: usize, column: &str, v: &str) -> Result<Option<f64>> {
    if v.is_empty() {
        return Ok(None);
    }
    let x: f64 = v.parse().map_err(|_| anyhow!("{origin}:{line}: column {column}: expected a number, got {v:?}"))?;
    if !x.is_finite() || x < 0.0 {
        bail!("{origin}:{line}: column {column}: expected 0 or more, got {v:?}");
    }
    Ok(Some(x))
}

/// A Kubernetes name from a trace identifier.
fn dns_name(s: &str) -> String {
    let n: String = s
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .trim_matches('-')
        .chars()
        .take(63)
        .collect();
    if n.is_empty() {
        "unnamed".into()
    } else {
        n
    }
}

/// Converts the two tables (their texts, and their names for errors).
pub fn convert(jobs: (&str, &str), tasks: (&str, &str), by: QueueBy, queue: &str) -> Result<Converted> {
    let mut out = Converted::default();
    let mut job_info: HashMap<String, (f64, String)> = HashMap::new();
    for (line, r) in rows(jobs.0, jobs.1, 6)? {
        let start = number(jobs.1, line, "start_time", &r[4])?;
        if let Some(start) = start {
            job_info.insert(r[0].clone(), (start, r[2].clone()));
        }
    }
    let mut by_job: BTreeMap<String, Vec<Task>> = BTreeMap::new();
    for (line, r) in rows(tasks.0, tasks.1, 10)? {
        let n = |i: usize, c: &str| number(tasks.1, line, c, &r[i]);
        let (Some(start), Some(end)) = (n(4, "start_time")?, n(5, "end_time")?) else {
            out.skipped_tasks += 1;
            continue;
        };
        if end <= start {
            out.skipped_tasks += 1;
            continue;
        }
        let instances = n(2, "inst_num")?.unwrap_or(1.0).max(1.0) as u32;
        let t = Task {
            instances,
            start,
            end,
            cpu: n(6, "plan_cpu")?.unwrap_or(0.0) / 100.0,
            mem_gb: n(7, "plan_mem")?.unwrap_or(0.0),
            gpu: n(8, "plan_gpu")?.unwrap_or(0.0) / 100.0,
            gpu_type: r[9].clone(),
        };
        by_job.entry(r[0].clone()).or_default().push(t);
    }
    let mut list = Vec::new();
    for (name, tasks) in by_job {
        let first = tasks.iter().map(|t| t.start).fold(f64::INFINITY, f64::min);
        let (submit, user) = job_info.get(&name).cloned().unwrap_or((first, String::new()));
        let duration = tasks.iter().map(|t| t.end - t.start).fold(0.0, f64::max);
        let count: u32 = tasks.iter().map(|t| t.instances).sum();
        let max = |f: fn(&Task) -> f64| tasks.iter().map(f).fold(0.0, f64::max);
        let (cpu, mem, gpu) = (max(|t| t.cpu), max(|t| t.mem_gb), max(|t| t.gpu));
        // The model of the task asking for the most GPUs.
        let mut by_gpu: Vec<&Task> = tasks.iter().collect();
        by_gpu.sort_by(|a, b| b.gpu.total_cmp(&a.gpu));
        let gpu_type = by_gpu.iter().map(|t| t.gpu_type.as_str()).find(|g| !g.is_empty()).unwrap_or("misc");
        let q = match by {
            QueueBy::One => queue.to_string(),
            QueueBy::User if !user.is_empty() => dns_name(&user),
            QueueBy::User => queue.to_string(),
            QueueBy::GpuType => dns_name(gpu_type),
        };
        let mut j = TraceJob::new(dns_name(&name), submit.min(first), duration, q);
        j.tasks = count;
        j.min_available = count;
        j.cpu = (cpu > 0.0).then(|| format!("{}m", (cpu * 1000.0).round()));
        j.memory = (mem > 0.0).then(|| format!("{}Mi", (mem * 1024.0).round()));
        j.gpu = (gpu > 0.0).then(|| format!("{}", gpu.ceil()));
        list.push(j);
    }
    // Time from the first submission, in submission order.
    let t0 = list.iter().map(|j| j.submit).fold(f64::INFINITY, f64::min);
    for j in &mut list {
        j.submit -= t0;
    }
    list.sort_by(|a, b| a.submit.total_cmp(&b.submit).then_with(|| a.job.cmp(&b.job)));
    out.jobs = list;
    Ok(out)
}
