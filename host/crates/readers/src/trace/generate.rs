//! Synthetic traces with the shape of published batch traces: most jobs
//! single-task and short, a tail of large gangs and long runs, arrivals
//! spread over the period. Seeded, so a run can be repeated exactly.

use super::TraceJob;

/// What to generate.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Jobs.
    pub jobs: usize,
    /// Seconds the submissions spread over.
    pub span: f64,
    /// The queues jobs go to, each job to one at random.
    pub queues: Vec<String>,
    /// The random seed: equal shapes make equal traces.
    pub seed: u64,
    /// Fraction of jobs whose tasks each ask for one GPU.
    pub gpu_jobs: f64,
    /// Each job's time limit as this multiple of its run time, rounded up
    /// to a minute (users overestimate: Slurm traces show 2 to 5); none:
    /// no limits.
    pub limit_factor: Option<f64>,
}

/// SplitMix64: small, fast, and the same numbers on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The jobs, in submission order.
pub fn generate(shape: &Shape) -> Vec<TraceJob> {
    let mut rng = Rng(shape.seed);
    let mut submits: Vec<f64> = (0..shape.jobs).map(|_| (rng.unit() * shape.span).floor()).collect();
    submits.sort_by(f64::total_cmp);
    let queues: &[String] = if shape.queues.is_empty() { &[] } else { &shape.queues };
    let width = shape.jobs.max(1).to_string().len();
    submits
        .into_iter()
        .enumerate()
        .map(|(i, submit)| {
            // Log-uniform run time from 1 minute to 12 hours.
            let duration = (60.0 * (720.0f64).powf(rng.unit())).round();
            let r = rng.unit();
            let tasks: u32 = match r {
                r if r < 0.7 => 1,
                r if r < 0.92 => 2 + (rng.next() % 7) as u32,
                _ => 8 + (rng.next() % 25) as u32,
            };
            let cpu = [1u32, 1, 2, 2, 4, 8][(rng.next() % 6) as usize];
            let queue = match queues.len() {
                0 => "default".to_string(),
                n => queues[(rng.next() % n as u64) as usize].clone(),
            };
            let mut j = TraceJob::new(format!("job-{i:0width$}"), submit, duration, queue);
            j.tasks = tasks;
            j.min_available = if tasks > 1 && rng.unit() < 0.8 { tasks } else { 1 };
            j.cpu = Some(cpu.to_string());
            j.memory = Some(format!("{}Gi", cpu * 4));
            if rng.unit() < shape.gpu_jobs {
                j.gpu = Some("1".into());
            }
            if let Some(f) = shape.limit_factor {
                j.time_limit = Some(format!("{}m", (duration * f / 60.0).ceil().max(1.0)));
            }
            j
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_trace() {
        let shape = Shape {
            jobs: 1000,
            span: 86400.0,
            queues: vec!["a".into(), "b".into()],
            seed: 7,
            gpu_jobs: 0.2,
            limit_factor: None,
        };
        let (a, b) = (generate(&shape), generate(&shape));
        assert_eq!(a, b);
        assert!(a.windows(2).all(|w| w[0].submit <= w[1].submit));
        assert!(a.iter().all(|j| j.submit < 86400.0 && j.duration >= 60.0 && j.duration <= 43200.0));
        assert!(a.iter().any(|j| j.queue == "a") && a.iter().any(|j| j.queue == "b"));
        let single = a.iter().filter(|j| j.tasks == 1).count();
        assert!((600..800).contains(&single), "{single}");
        assert!(a.iter().all(|j| j.time_limit.is_none()));
        let limited = generate(&Shape { limit_factor: Some(2.0), ..shape.clone() });
        for (j, l) in a.iter().zip(&limited) {
            let minutes: f64 = l.time_limit.as_deref().unwrap().trim_end_matches('m').parse().unwrap();
            assert_eq!(minutes, (j.duration * 2.0 / 60.0).ceil().max(1.0), "{l:?}");
        }
        assert_ne!(generate(&Shape { seed: 8, ..shape }), a);
    }
}
