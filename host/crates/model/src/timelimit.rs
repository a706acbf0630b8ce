//! Job time limits, Slurm's `--time`: a job's maximum run time, from its
//! PodGroup (or Volcano Job) annotation, else its queue's default, never
//! above its queue's maximum; what happens to a job that overruns is the
//! queue's to say. A pod's `spec.activeDeadlineSeconds` is Kubernetes' own
//! limit and always ends the pod, as the kubelet does.

use crate::cluster::{Cluster, Pod, PodGroup, Queue};
use std::collections::{BTreeMap, HashMap};

/// A job's maximum run time (PodGroup or Volcano Job annotation).
pub const TIME_LIMIT: &str = "tephra.io/time-limit";
/// A queue's limit for jobs that set none.
pub const DEFAULT_TIME_LIMIT: &str = "tephra.io/default-time-limit";
/// The most a queue lets a job ask for.
pub const MAX_TIME_LIMIT: &str = "tephra.io/max-time-limit";
/// What a queue does with a job past its limit: `evict` (default), `unprotect`
/// or `nothing`.
pub const OVERRUN: &str = "tephra.io/overrun";

/// What happens to a job that runs past its limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Overrun {
    /// Its pods are ended (Slurm's behaviour).
    #[default]
    Evict,
    /// It runs on, except where it was let in ahead of a reservation (a big
    /// job's nodes, a window's): there it is evicted once past its limit.
    Unprotect,
    /// It runs on.
    Nothing,
}

impl Overrun {
    /// Whether the limit is a promise others may plan on: the job is gone
    /// from any node it was let onto ahead of a reservation by its limit.
    pub fn enforced(self) -> bool {
        self != Overrun::Nothing
    }
}

/// Checks the time-limit annotations of any object; the error names the
/// annotation and says what was expected.
pub fn check(annotations: &BTreeMap<String, String>) -> Result<(), (String, String)> {
    for key in [TIME_LIMIT, DEFAULT_TIME_LIMIT, MAX_TIME_LIMIT] {
        if let Some(v) = annotations.get(key) {
            match crate::duration::duration_ms(v) {
                Some(ms) if ms > 0 => {}
                _ => return Err((key.into(), format!("{v:?} is not a positive duration (like 90s, 2h, 1h30m)"))),
            }
        }
    }
    match annotations.get(OVERRUN).map(String::as_str) {
        None | Some("evict" | "unprotect" | "nothing") => Ok(()),
        Some(v) => Err((OVERRUN.into(), format!("{v:?} is not evict, unprotect or nothing"))),
    }
}

fn ms(annotations: &BTreeMap<String, String>, key: &str) -> Option<i64> {
    annotations.get(key).and_then(|v| crate::duration::duration_ms(v)).filter(|&ms| ms > 0)
}

/// The job's limit in ms: its own, else its queue's default, at most its
/// queue's maximum (none: no limit).
pub fn job_limit_ms(g: &PodGroup, q: Option<&Queue>) -> Option<i64> {
    let qa = q.map(|q| &q.annotations);
    let own = ms(&g.annotations, TIME_LIMIT).or_else(|| qa.and_then(|a| ms(a, DEFAULT_TIME_LIMIT)));
    match (own, qa.and_then(|a| ms(a, MAX_TIME_LIMIT))) {
        (Some(o), Some(m)) => Some(o.min(m)),
        (None, Some(m)) => Some(m),
        (o, None) => o,
    }
}

/// Per PodGroup (namespace, name) with a limit: the limit in ms and what
/// its queue does past it.
pub fn job_limits(c: &Cluster) -> HashMap<(String, String), (i64, Overrun)> {
    let queues: HashMap<&str, &Queue> = c.queues.iter().map(|q| (q.name.as_str(), q)).collect();
    c.podgroups
        .iter()
        .filter_map(|g| {
            let q = queues.get(g.queue.as_str()).copied();
            Some(((g.namespace.clone(), g.name.clone()), (job_limit_ms(g, q)?, overrun(q))))
        })
        .collect()
}

/// How long a pod is expected to run at most, in ms: the shortest of its
/// estimate annotation, its job's limit and its activeDeadlineSeconds.
pub fn expected_run_ms(p: &Pod, job_limit_ms: Option<i64>) -> Option<i64> {
    [p.estimated_ms, job_limit_ms, p.active_deadline_ms].into_iter().flatten().min()
}

/// A limit as Go writes durations (`2h`, `1h30m`, `90s` as `1m30s`).
pub fn display(ms: i64) -> String {
    let s = ms / 1000;
    let (h, m, sec) = (s / 3600, s / 60 % 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if sec > 0 || out.is_empty() {
        out += &format!("{sec}s");
    }
    out
}

/// What the queue does with overrunning jobs.
pub fn overrun(q: Option<&Queue>) -> Overrun {
    match q.and_then(|q| q.annotations.get(OVERRUN)).map(String::as_str) {
        Some("nothing") => Overrun::Nothing,
        Some("unprotect") => Overrun::Unprotect,
        _ => Overrun::Evict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn limits_display_as_go_durations() {
        assert_eq!(display(7_200_000), "2h");
        assert_eq!(display(5_400_000), "1h30m");
        assert_eq!(display(90_000), "1m30s");
        assert_eq!(display(0), "0s");
    }

    #[test]
    fn own_limit_else_default_never_above_the_maximum() {
        let g = |a: &[(&str, &str)]| PodGroup { annotations: with(a), ..Default::default() };
        let q = |a: &[(&str, &str)]| Queue { annotations: with(a), ..Default::default() };
        assert_eq!(job_limit_ms(&g(&[]), None), None);
        assert_eq!(job_limit_ms(&g(&[(TIME_LIMIT, "90s")]), None), Some(90_000));
        let queue = q(&[(DEFAULT_TIME_LIMIT, "1h"), (MAX_TIME_LIMIT, "2h")]);
        assert_eq!(job_limit_ms(&g(&[]), Some(&queue)), Some(3_600_000));
        assert_eq!(job_limit_ms(&g(&[(TIME_LIMIT, "3h")]), Some(&queue)), Some(7_200_000));
        assert_eq!(job_limit_ms(&g(&[(TIME_LIMIT, "10m")]), Some(&queue)), Some(600_000));
        assert_eq!(job_limit_ms(&g(&[]), Some(&q(&[(MAX_TIME_LIMIT, "5m")]))), Some(300_000));
        assert_eq!(overrun(Some(&q(&[(OVERRUN, "nothing")]))), Overrun::Nothing);
        assert_eq!(overrun(Some(&q(&[(OVERRUN, "unprotect")]))), Overrun::Unprotect);
        assert_eq!(overrun(None), Overrun::Evict);
        assert!(check(&with(&[(TIME_LIMIT, "2h"), (OVERRUN, "evict")])).is_ok());
        assert_eq!(check(&with(&[(TIME_LIMIT, "soon")])).unwrap_err().0, TIME_LIMIT);
        assert_eq!(check(&with(&[(MAX_TIME_LIMIT, "0s")])).unwrap_err().0, MAX_TIME_LIMIT);
        assert_eq!(
            check(&with(&[(OVERRUN, "kill")])).unwrap_err(),
            (OVERRUN.into(), "\"kill\" is not evict, unprotect or nothing".into())
        );
    }
}
