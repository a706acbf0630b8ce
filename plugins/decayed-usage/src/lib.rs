//! Decayed usage: fair share from history, as Slurm's multifactor priority
//! has it. The host keeps each queue's usage (cluster share × seconds, per
//! namespace too), halves it every `halfLife` and writes it on the Queue as
//! `tephra.io/usage`; this policy decays it to the session's time and puts
//! the queue with the least usage per unit of weight first, and within that
//! the job whose namespace used least. Combine it with proportion or
//! capacity: quotas still bound what each queue gets, usage orders who asks
//! first. Arguments: `halfLife` (default 7d, a Go duration or days),
//! `persistPeriod` (how often the host writes the annotation, default 1m).

use tephra_sdk::{parse_duration, Args, ExtensionPoint as P, Policy, Session};

/// The Queue annotation the host keeps usage in.
pub const USAGE: &str = "tephra.io/usage";
const HALF_LIFE_MS: f64 = 7.0 * 86_400_000.0;

#[derive(Default)]
pub struct DecayedUsage {
    /// Per queue, its usage at the session's time.
    queue: Vec<f64>,
    /// Per job, its namespace's usage in its queue.
    job: Vec<f64>,
}

/// A half-life: a Go duration or whole days.
fn half_life(v: &str) -> Option<f64> {
    match v.strip_suffix('d').and_then(|d| d.parse::<f64>().ok()) {
        Some(days) => Some(days * 86_400_000.0),
        None => parse_duration(v),
    }
    .filter(|ms| *ms > 0.0)
}

/// A queue's usage as the host wrote it.
struct Stored<'a> {
    total: f64,
    /// When it was written (ms since the epoch).
    at: f64,
    namespaces: Vec<(&'a str, f64)>,
}

/// Reads `total=…;at=…;ns/<namespace>=…`.
fn parse(s: &str) -> Option<Stored<'_>> {
    let (mut total, mut at, mut ns) = (None, None, Vec::new());
    for part in s.split(';').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=')?;
        let v: f64 = v.parse().ok()?;
        match k {
            "total" => total = Some(v),
            "at" => at = Some(v),
            _ => ns.push((k.strip_prefix("ns/")?, v)),
        }
    }
    Some(Stored { total: total?, at: at?, namespaces: ns })
}

impl Policy for DecayedUsage {
    const NAME: &'static str = "decayed-usage";
    const POINTS: &'static [P] = &[P::QueueOrder, P::JobOrder];

    fn open(&mut self, s: &Session, args: &Args) -> Result<(), String> {
        let h = match args.get("halfLife") {
            Some(v) => half_life(v).ok_or_else(|| format!("argument halfLife: {v:?} is not a duration"))?,
            None => HALF_LIFE_MS,
        };
        if let Some(v) = args.get("persistPeriod") {
            parse_duration(v).ok_or_else(|| format!("argument persistPeriod: {v:?} is not a duration"))?;
        }
        let now = s.snap.now_ms as f64;
        self.queue = vec![0.0; s.queues()];
        let mut by_ns: Vec<Vec<(&str, f64)>> = vec![Vec::new(); s.queues()];
        for l in s.snap.queue_annotations.iter().filter(|l| s.str(l.key) == USAGE) {
            // A bad value counts as no usage; the host warns about it.
            let Some(u) = parse(s.str(l.value)) else { continue };
            let f = 0.5f64.powf((now - u.at).max(0.0) / h);
            self.queue[l.owner as usize] = u.total * f;
            by_ns[l.owner as usize] = u.namespaces.into_iter().map(|(n, v)| (n, v * f)).collect();
        }
        self.job = (0..s.jobs() as u32)
            .map(|j| {
                let ns = s.job_tasks(j).first().map(|&t| s.str(s.snap.task_namespace[t as usize]));
                let q = s.job_queue(j) as usize;
                ns.and_then(|ns| by_ns[q].iter().find(|(n, _)| *n == ns)).map_or(0.0, |(_, v)| *v)
            })
            .collect();
        Ok(())
    }

    /// Least usage per unit of weight first (a queue of weight 0 last).
    fn queue_order(&mut self, s: &Session, q: u32) -> f64 {
        let w = s.snap.queue_weight[q as usize];
        if w > 0.0 {
            self.queue[q as usize] / w
        } else {
            f64::INFINITY
        }
    }

    fn job_order(&mut self, _s: &Session, j: u32) -> f64 {
        self.job[j as usize]
    }
}

#[cfg(target_arch = "wasm32")]
tephra_sdk::export_plugin!(DecayedUsage: queue_order, job_order);

#[cfg(test)]
mod tests {
    use super::*;
    use tephra_sdk::types::Label;
    use tephra_sdk::{SnapshotBuilder, TaskStatus, NONE};

    #[test]
    fn older_usage_weighs_less() {
        let mut b = SnapshotBuilder::new(&[]);
        let (old, recent) = (b.queue(1.0), b.queue(1.0));
        let key = b.string(USAGE);
        // old used 400 two hours ago, recent 150 now; with a 1 h half-life old is at 100.
        for (q, v) in [(old, "total=400;at=0;ns/a=400"), (recent, "total=150;at=7200000")] {
            let value = b.string(v);
            b.snap.queue_annotations.push(Label { owner: q, key, value });
        }
        let j = b.job(old, 1);
        b.task(j, &[1000.0], TaskStatus::Pending, NONE);
        b.snap.now_ms = 7_200_000;
        let s = b.build();
        let mut p = DecayedUsage::default();
        p.open(&s, &Args::from_pairs(vec![("halfLife".into(), "1h".into())])).unwrap();
        assert!(p.queue_order(&s, old) < p.queue_order(&s, recent));
        assert_eq!(p.queue_order(&s, old), 100.0);
        let err = p.open(&s, &Args::from_pairs(vec![("halfLife".into(), "soon".into())])).unwrap_err();
        assert!(err.contains("halfLife"), "{err}");
    }
}
