//! Workload traces: jobs with a submit time, a run time, a queue, a gang size
//! and per-task requests, one CSV row per job (docs/lab.md). A trace replays
//! as PodGroups arriving at their submit times whose pods, as a Volcano
//! Job's, are made once the group is admitted (and made again when evicted);
//! each pod runs for the job's duration once started.
//!
//! Columns are found by their header name, in any order:
//!
//! | column | meaning | default |
//! |---|---|---|
//! | `job` | job name (unique) | required |
//! | `submit` | seconds after the trace starts | required |
//! | `duration` | seconds each task runs once started | required |
//! | `tasks` | pods in the job | 1 |
//! | `min_available` | gang size: pods that must start together | `tasks` |
//! | `queue` | Volcano queue | `default` |
//! | `namespace` | namespace | `default` |
//! | `priority` | pod priority | 0 |
//! | `cpu`, `memory`, `gpu` | per-task requests (quantities; gpu is `nvidia.com/gpu`) | none |
//! | `time_limit` | the job's time limit (`2h`; tephra_model::timelimit) | none |

pub mod alibaba;
pub mod generate;

use crate::manifest::{Object, Timed, DURATION};
use anyhow::{anyhow, bail, Result};
use std::collections::{BTreeMap, HashSet};
use tephra_model::cluster::{PodGroup, PodPhase};
use tephra_model::resource::{parse_resource, ResourceList};

/// PodGroup and pod annotation marking what a trace made: once such a job
/// completes, the simulator forgets it (a week of jobs stays small).
pub const TRACE_JOB: &str = "tephra.io/trace-job";

/// The columns, in the order [`write`] puts them.
pub const COLUMNS: [&str; 12] = [
    "job",
    "submit",
    "duration",
    "tasks",
    "min_available",
    "queue",
    "namespace",
    "priority",
    "cpu",
    "memory",
    "gpu",
    "time_limit",
];

/// One job of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceJob {
    /// `job`: its name, unique in the trace.
    pub job: String,
    /// `submit`: seconds after the trace starts.
    pub submit: f64,
    /// `duration`: seconds each task runs once started.
    pub duration: f64,
    /// `tasks`: pods in the job.
    pub tasks: u32,
    /// `min_available`: the gang's size.
    pub min_available: u32,
    /// `queue`.
    pub queue: String,
    /// `namespace`.
    pub namespace: String,
    /// `priority`: its pods' priority.
    pub priority: i32,
    /// Per task: `cpu`, `memory`, `gpu` as written (quantities).
    pub cpu: Option<String>,
    /// See [`TraceJob::cpu`].
    pub memory: Option<String>,
    /// See [`TraceJob::cpu`].
    pub gpu: Option<String>,
    /// The job's time limit, as written (`2h`).
    pub time_limit: Option<String>,
}

impl TraceJob {
    /// A one-task job of `queue` with no requests.
    pub fn new(job: impl Into<String>, submit: f64, duration: f64, queue: impl Into<String>) -> Self {
        TraceJob {
            job: job.into(),
            submit,
            duration,
            tasks: 1,
            min_available: 1,
            queue: queue.into(),
            namespace: "default".into(),
            priority: 0,
            cpu: None,
            memory: None,
            gpu: None,
            time_limit: None,
        }
    }
}

/// Reads a trace; errors name the file, line, job and column.
pub fn read(text: &str, origin: &str) -> Result<Vec<TraceJob>> {
    let mut r = csv::ReaderBuilder::new().trim(csv::Trim::All).comment(Some(b'#')).from_reader(text.as_bytes());
    let header: Vec<String> =
        r.headers().map_err(|e| anyhow!("{origin}: header: {e}"))?.iter().map(str::to_string).collect();
    for h in &header {
        if !COLUMNS.contains(&h.as_str()) {
            bail!("{origin}: header: unknown column {h:?} (columns: {})", COLUMNS.join(", "));
        }
    }
    for need in ["job", "submit", "duration"] {
        if !header.iter().any(|h| h == need) {
            bail!("{origin}: header: column {need:?} is required");
        }
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| anyhow!("{origin}: {e}"))?;
        let line = rec.position().map_or(0, |p| p.line());
        let get = |c: &str| header.iter().position(|h| h == c).and_then(|i| rec.get(i)).filter(|v| !v.is_empty());
        let job = get("job").ok_or_else(|| anyhow!("{origin}:{line}: column job: missing"))?.to_string();
        let at = |col: &str, why: String| anyhow!("{origin}:{line}: job {job}: column {col}: {why}");
        let num = |col: &str| -> Result<Option<f64>> {
            get(col).map(|v| v.parse::<f64>().map_err(|_| at(col, format!("expected a number, got {v:?}")))).transpose()
        };
        let count = |col: &str| -> Result<Option<u32>> {
            get(col)
                .map(|v| v.parse::<u32>().map_err(|_| at(col, format!("expected a whole number, got {v:?}"))))
                .transpose()
        };
        let submit = num("submit")?.ok_or_else(|| at("submit", "missing".into()))?;
        let duration = num("duration")?.ok_or_else(|| at("duration", "missing".into()))?;
        if !(submit.is_finite() && submit >= 0.0) {
            return Err(at("submit", "must be 0 or more seconds".into()));
        }
        if !(duration.is_finite() && duration > 0.0) {
            return Err(at("duration", "must be more than 0 seconds".into()));
        }
        let tasks = count("tasks")?.unwrap_or(1);
        if tasks == 0 {
            return Err(at("tasks", "must be at least 1".into()));
        }
        let min_available = count("min_available")?.unwrap_or(tasks);
        if min_available == 0 || min_available > tasks {
            return Err(at("min_available", format!("must be 1 to tasks ({tasks}), got {min_available}")));
        }
        let priority = get("priority")
            .map(|v| v.parse::<i32>().map_err(|_| at("priority", format!("expected an integer, got {v:?}"))))
            .transpose()?
            .unwrap_or(0);
        let quantity = |col: &str, res: &str| -> Result<Option<String>> {
            let Some(v) = get(col) else { return Ok(None) };
            match parse_resource(res, v) {
                Ok(x) if x >= 0.0 => Ok(Some(v.to_string())),
                Ok(_) => Err(at(col, "must not be negative".into())),
                Err(e) => Err(at(col, e)),
            }
        };
        let j = TraceJob {
            queue: get("queue").unwrap_or("default").to_string(),
            namespace: get("namespace").unwrap_or("default").to_string(),
            submit,
            duration,
            tasks,
            min_available,
            priority,
            cpu: quantity("cpu", "cpu")?,
            memory: quantity("memory", "memory")?,
            gpu: quantity("gpu", GPU)?,
            time_limit: match get("time_limit") {
                Some(v) if tephra_model::duration::duration_ms(v).is_some_and(|ms| ms > 0) => Some(v.to_string()),
                Some(v) => return Err(at("time_limit", format!("{v:?} is not a positive duration (like 90s, 2h)"))),
                None => None,
            },
            job: job.clone(),
        };
        if !seen.insert((j.namespace.clone(), j.job.clone())) {
            bail!("{origin}:{line}: job {job}: column job: defined twice");
        }
        out.push(j);
    }
    Ok(out)
}

/// The resource name of the `gpu` column.
pub const GPU: &str = "nvidia.com/gpu";

/// Writes jobs as a trace, with every column.
pub fn write(jobs: &[TraceJob], out: impl std::io::Write) -> Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(COLUMNS)?;
    for j in jobs {
        let opt = |v: &Option<String>| v.clone().unwrap_or_default();
        w.write_record([
            j.job.clone(),
            trim_float(j.submit),
            trim_float(j.duration),
            j.tasks.to_string(),
            j.min_available.to_string(),
            j.queue.clone(),
            j.namespace.clone(),
            j.priority.to_string(),
            opt(&j.cpu),
            opt(&j.memory),
            opt(&j.gpu),
            opt(&j.time_limit),
        ])?;
    }
    w.flush()?;
    Ok(())
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The PodGroup and pods of each job, arriving at its submit time.
pub fn objects(jobs: &[TraceJob]) -> Result<Vec<Timed>> {
    let mut out = Vec::with_capacity(jobs.len() * 2);
    for j in jobs {
        let mut req = ResourceList::new();
        for (res, v) in [("cpu", &j.cpu), ("memory", &j.memory), (GPU, &j.gpu)] {
            if let Some(v) = v {
                req.insert(res.to_string(), parse_resource(res, v).map_err(|e| anyhow!("job {}: {e}", j.job))?);
            }
        }
        let created = (j.submit * 1000.0) as i64;
        let mut mark: BTreeMap<String, String> = [(TRACE_JOB.to_string(), j.job.clone())].into();
        if let Some(limit) = &j.time_limit {
            mark.insert(tephra_model::timelimit::TIME_LIMIT.into(), limit.clone());
        }
        let templates = (0..j.tasks)
            .map(|i| {
                let mut annotations = mark.clone();
                annotations.insert(DURATION.into(), trim_float(j.duration));
                annotations.insert("scheduling.k8s.io/group-name".into(), j.job.clone());
                tephra_model::cluster::Pod {
                    namespace: j.namespace.clone(),
                    name: format!("{}-{i}", j.job),
                    group: Some(j.job.clone()),
                    scheduler_name: "volcano".into(),
                    requests: req.clone(),
                    phase: PodPhase::Pending,
                    priority: Some(j.priority),
                    preemptable: true,
                    task_spec: "task".into(),
                    annotations,
                    created: created + i64::from(i),
                    ..Default::default()
                }
            })
            .collect();
        // As a Volcano Job: the pods are made once the group is admitted,
        // and an evicted one is made again.
        let group = PodGroup {
            namespace: j.namespace.clone(),
            name: j.job.clone(),
            queue: j.queue.clone(),
            min_member: j.min_available,
            min_resources: Some(req.iter().map(|(k, v)| (k.clone(), v * f64::from(j.min_available))).collect()),
            created,
            annotations: mark,
            job_templates: templates,
            ..Default::default()
        };
        out.push(Timed { at: j.submit, object: Object::PodGroup(group) });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_refuses_with_the_line_and_column() {
        let text = "# a comment\njob,submit,duration,tasks,min_available,queue,cpu,memory,gpu\n\
                    a,0,60,4,2,q1,1,2Gi,1\nb,30.5,10,,,,500m,,\n";
        let jobs = read(text, "t.csv").unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].tasks, jobs[0].min_available, jobs[0].queue.as_str()), (4, 2, "q1"));
        assert_eq!((jobs[1].tasks, jobs[1].min_available, jobs[1].queue.as_str()), (1, 1, "default"));
        let mut buf = Vec::new();
        write(&jobs, &mut buf).unwrap();
        assert_eq!(read(std::str::from_utf8(&buf).unwrap(), "again").unwrap(), jobs);
        let objs = objects(&jobs).unwrap();
        assert_eq!(objs.len(), 2);
        let Object::PodGroup(g) = &objs[0].object else { panic!() };
        assert_eq!((g.min_member, g.job_templates.len(), g.queue.as_str()), (2, 4, "q1"));
        assert!(objs.iter().all(|t| t.at == 0.0 || t.at == 30.5));
        let err = |t: &str| read(t, "t.csv").unwrap_err().to_string();
        assert_eq!(err("job,submit\na,1\n"), "t.csv: header: column \"duration\" is required");
        assert_eq!(
            err("job,submit,duration,cpus\n"),
            "t.csv: header: unknown column \"cpus\" (columns: job, submit, duration, tasks, min_available, queue, \
             namespace, priority, cpu, memory, gpu, time_limit)"
        );
        assert_eq!(err("job,submit,duration\na,x,1\n"), "t.csv:2: job a: column submit: expected a number, got \"x\"");
        assert_eq!(err("job,submit,duration\na,1,0\n"), "t.csv:2: job a: column duration: must be more than 0 seconds");
        assert_eq!(
            err("job,submit,duration,tasks,min_available\na,1,1,2,3\n"),
            "t.csv:2: job a: column min_available: must be 1 to tasks (2), got 3"
        );
        assert_eq!(
            err("job,submit,duration,cpu\na,1,1,lots\n"),
            "t.csv:2: job a: column cpu: invalid quantity \"lots\""
        );
        assert_eq!(err("job,submit,duration\na,1,1\na,2,1\n"), "t.csv:3: job a: column job: defined twice");
    }
}
