//! The `tephra` command.

use anyhow::{anyhow, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tephra::admin::auth::{self, Authorizer};
use tephra::config::SchedulerConfig;
use tephra::conformance::{self, Verdict};
use tephra::manifest::{self, Object};
use tephra::plugin::Backend;
use tephra::scheduler::control::channel_pair;
use tephra::scheduler::{Driver, Library, Loop, Scheduler};
use tephra::simulate::{Options, Simulation};
use tephra::wasm::{Runtime, Sandbox, WasmPlugin};

/// Sessions allocate many short-lived buffers; glibc's malloc spent a fifth
/// of a trace replay's time (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The demo cluster `tephra simulate` runs when given no files.
const DEMO: &str = include_str!("../../examples/demo/cluster.yaml");

#[derive(Parser)]
#[command(
    name = "tephra",
    version,
    about = "A batch scheduler for Kubernetes whose policies are WebAssembly components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate scheduling cycles over Kubernetes manifests (a demo cluster when no file is given).
    Simulate(Run),
    /// Run conformance scenario files; exits non-zero on any failure.
    Conformance {
        files: Vec<PathBuf>,
        #[arg(long)]
        plugins_dir: Option<PathBuf>,
    },
    /// Run as the Kubernetes scheduler of pods with `spec.schedulerName` = --scheduler-name.
    Run(Serve),
    /// Work with plugin components.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// Write the live cluster's scheduling state (nodes, queues, PodGroups, HyperNodes,
    /// Reservations, priority classes, pending and running pods, the scheduler config) as manifests
    /// `tephra simulate` and `tephra estimate` replay; environment, commands, Secrets and other
    /// fields scheduling does not read are left out.
    Snapshot {
        /// Kubeconfig file (default: in-cluster config, else $KUBECONFIG or ~/.kube/config).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// The scheduler's `spec.schedulerName` (its pods are written as `tephra`'s when another).
        #[arg(long, default_value = "volcano")]
        scheduler_name: String,
        /// The scheduler ConfigMap, NAMESPACE/NAME (its volcano-scheduler.conf is included).
        #[arg(long, default_value = "volcano-system/volcano-scheduler-configmap")]
        config_map: String,
        /// Write here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Predict when each waiting job starts (Slurm's `squeue --start`): the simulator run
    /// forward from the manifests' state with every pod running as long as its job's time limit
    /// (or estimate) allows and nothing new arriving (docs/batch.md).
    Estimate {
        /// Manifests, such as `tephra snapshot` writes.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Scheduler config in Volcano's format (default: a ConfigMap in the files, else built-in).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Directory of `<plugin>.wasm` components overriding the built-in ones.
        #[arg(long)]
        plugins_dir: Option<PathBuf>,
        /// Seconds per cycle (the scheduler's period).
        #[arg(long, default_value_t = 1.0, value_parser = period_seconds)]
        period: f64,
        /// Cycles to look ahead at most.
        #[arg(long, default_value_t = 100_000)]
        horizon: usize,
    },
    /// Check the lab's forecast against a live cluster (docs/lab.md, "Fidelity"): the workload
    /// runs in the simulator and, replayed on the cluster (`./dev cluster up 0`: kwok nodes, Kubernetes'
    /// controllers) under `tephra run` on a clock compressed by --speed, is compared job by job.
    Fidelity {
        /// The workload: manifests with the nodes, queues and scheduler config, and a trace (.csv).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The cluster's kubeconfig (./dev cluster up prints it).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Scheduler config in Volcano's format (default: a ConfigMap in the files, else built-in).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Directory of `<plugin>.wasm` components overriding the built-in ones (simulator side).
        #[arg(long)]
        plugins_dir: Option<PathBuf>,
        /// Seconds per cycle, trace time (both sides; `tephra run` gets PERIOD / SPEED).
        #[arg(long, default_value_t = 10.0, value_parser = period_seconds)]
        period: f64,
        /// Trace seconds per wall second on the cluster.
        #[arg(long, default_value_t = 10.0, value_parser = period_seconds)]
        speed: f64,
        /// Give up on the cluster after this long (wall time).
        #[arg(long, default_value = "2h", value_parser = tephra::k8s::parse_duration)]
        timeout: std::time::Duration,
        /// The comparison as JSON, here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// A lab variant (a manifest with the scheduler ConfigMap and Queues replacing the
        /// workload's, as `tephra simulate --compare` takes) to run the workload under.
        #[arg(long)]
        variant: Option<PathBuf>,
        /// The lab's report of the simulated run with a "predicted vs observed" section (HTML,
        /// and the figures as JSON beside it).
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Make workload traces for `tephra simulate` (docs/lab.md).
    Trace {
        #[command(subcommand)]
        command: TraceCommand,
    },
}

#[derive(Subcommand)]
enum TraceCommand {
    /// Convert the Alibaba GPU cluster trace of 2020 (pai_job_table.csv and
    /// pai_task_table.csv in DIR) to a tephra trace on stdout.
    Alibaba {
        dir: PathBuf,
        /// Queues by `user`, `gpu-type`, or `one` (all in --queue).
        #[arg(long, default_value = "one")]
        queue_by: String,
        /// The queue of every job with `--queue-by one` (and of jobs without a user).
        #[arg(long, default_value = "default")]
        queue: String,
    },
    /// Generate a synthetic trace on stdout.
    Generate {
        #[arg(long, default_value_t = 1000)]
        jobs: usize,
        /// Days the submissions spread over.
        #[arg(long, default_value_t = 1.0)]
        days: f64,
        /// Queues the jobs spread over (default: `default`).
        #[arg(long, value_delimiter = ',')]
        queues: Vec<String>,
        /// The same seed gives the same trace.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Fraction of jobs whose tasks each ask for one GPU.
        #[arg(long, default_value_t = 0.0)]
        gpu_jobs: f64,
        /// Give each job a time limit of this many times its run time (rounded up to a minute).
        #[arg(long)]
        time_limit_factor: Option<f64>,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Validate a component offline and print what it declares.
    Check { file: PathBuf },
    /// Run a component (any language) against scenario files in the project's scenario format
    /// (tests/scenarios/core.yaml), as the live version of the plugin it names: a line per case,
    /// a non-zero exit when one fails or none ran. A fault of the component fails its case: a
    /// trap, an answer out of contract, a call past the call deadline or the memory limit.
    Test {
        file: PathBuf,
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// The time one call may take, as the cluster's scheduler config sets it
        /// (`limits.callDeadline`), in milliseconds; default 2000.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        call_deadline_ms: Option<u64>,
        /// The linear memory one instance may grow to (`limits.memoryPerPlugin`), in MiB;
        /// default 256.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        memory_mib: Option<u64>,
        /// A JSON report on stdout instead of lines: the plugin, and per case its file, name,
        /// verdict, detail and milliseconds.
        #[arg(long)]
        json: bool,
    },
    /// Make a component of a core module built for wasip1 (a Go plugin: `GOOS=wasip1 GOARCH=wasm
    /// go build -buildmode=c-shared`): the WIT world embedded, WASI preview 1 adapted to preview 2.
    Componentize {
        core: PathBuf,
        /// The WIT directory holding the world (its deps/ beside).
        #[arg(long)]
        wit: PathBuf,
        /// The world the module implements.
        #[arg(long, default_value = "plugin")]
        world: String,
        /// Where to write the component.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Create a buildable plugin project with a test.
    New {
        name: String,
        /// rust, python, js or go.
        #[arg(long, default_value = "rust")]
        lang: String,
        /// Where to create it (default: ./NAME).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Publish a component to an OCI registry (the CNCF Wasm artifact layout), after checking
    /// it; prints the reference pinned by digest, for a Plugin object's spec.source.oci.reference.
    Push {
        file: PathBuf,
        /// host[:port]/repository[:tag]
        reference: String,
        /// Plain HTTP (a registry on loopback).
        #[arg(long)]
        insecure: bool,
        /// Registry user; the password is read from $TEPHRA_REGISTRY_PASSWORD.
        #[arg(long)]
        username: Option<String>,
    },
}

/// How `tephra simulate` runs.
#[derive(clap::Args)]
struct Run {
    /// Manifests (Node, Pod, Queue, PodGroup, Volcano Job, Deployment, Job, …, scheduler
    /// ConfigMap) and traces (`.csv`, docs/lab.md).
    files: Vec<PathBuf>,
    /// Scheduler config in Volcano's format (default: a ConfigMap in the files, else built-in).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Directory of `<plugin>.wasm` components overriding the built-in ones.
    #[arg(long)]
    plugins_dir: Option<PathBuf>,
    /// A component to run as the live version of the plugin it names (repeatable).
    #[arg(long = "plugin")]
    plugins: Vec<PathBuf>,
    /// A component to run as a shadow of the plugin it names: compared every cycle, never applied.
    #[arg(long = "shadow")]
    shadows: Vec<PathBuf>,
    /// Swap in new or changed `.wasm` files of --plugins-dir, and edits of --config, while running.
    #[arg(long)]
    watch: bool,
    /// Serve /healthz, /readyz, /metrics, /plugins and promote/rollback on this address.
    #[arg(long)]
    admin: Option<String>,
    /// A file holding the bearer token promote and rollback require (without one, they are refused).
    #[arg(long, requires = "admin")]
    admin_token_file: Option<PathBuf>,
    /// Pace cycles in real time (--period seconds apart) and keep running until --cycles.
    #[arg(long)]
    realtime: bool,
    /// Roll a newly promoted plugin version back after it faults this many cycles in a row.
    #[arg(long, default_value_t = 3)]
    rollback_after: u32,
    /// HyperNodes from node labels, tiers from the highest down (`zone,spine,rack`), as Volcano's
    /// label discoverer makes them, beside any HyperNode objects.
    #[arg(long, value_delimiter = ',')]
    hypernode_labels: Vec<String>,
    /// Stop after this many cycles (default 50; no limit with a trace, --compare or --report).
    #[arg(long)]
    cycles: Option<usize>,
    /// After a cycle that changed nothing, jump to the next arrival or completion (always on
    /// with a trace, --compare or --report).
    #[arg(long)]
    skip_idle: bool,
    /// A bound pod runs from the cycle that bound it, as on kwok's kubelets (default: from the
    /// next cycle, as a kubelet starting containers at Volcano's 1 s period).
    #[arg(long)]
    start_on_bind: bool,
    /// Arrivals and pods' ends at a cycle's instant are seen by the next cycle, as a live
    /// scheduler whose cycles tick on their own clock sees them (what `tephra fidelity` uses).
    #[arg(long)]
    live_clock: bool,
    /// Run the workload under this scheduler config (a ConfigMap manifest, which may also
    /// carry Queues replacing the workload's; or a volcano-scheduler.conf) or plugin version
    /// (`.wasm`), and compare: once against the workload's own config, repeated side by side.
    #[arg(long)]
    compare: Vec<PathBuf>,
    /// Write the comparison as HTML with charts here, and its figures as JSON beside it.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Simulated seconds per cycle (more than 0, at most a year).
    #[arg(long, default_value_t = 1.0, value_parser = period_seconds)]
    period: f64,
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
}

/// How `tephra run` runs.
#[derive(clap::Args)]
struct Serve {
    /// Kubeconfig file (default: in-cluster config, else $KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Scheduler config in Volcano's format (volcano-scheduler.conf); re-read when it changes.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Directory of `<plugin>.wasm` components overriding the built-in ones.
    #[arg(long = "plugins", alias = "plugins-dir")]
    plugins_dir: Option<PathBuf>,
    /// Pods whose `spec.schedulerName` is this are scheduled.
    #[arg(long, default_value = "volcano")]
    scheduler_name: String,
    /// A component to run as the live version of the plugin it names (repeatable).
    #[arg(long = "plugin")]
    plugins: Vec<PathBuf>,
    /// A component to run as a shadow of the plugin it names: compared every cycle, never applied.
    #[arg(long = "shadow")]
    shadows: Vec<PathBuf>,
    /// Swap in new or changed `.wasm` files of --plugins while running.
    #[arg(long)]
    watch: bool,
    /// Roll a newly promoted plugin version back after it faults this many cycles in a row.
    #[arg(long, default_value_t = 3)]
    rollback_after: u32,
    /// Serve /healthz, /readyz, /metrics, /plugins and promote/rollback on this address.
    #[arg(long)]
    admin: Option<String>,
    /// A file holding the bearer token promote and rollback require.
    #[arg(long, requires = "admin", conflicts_with = "admin_kubernetes_auth")]
    admin_token_file: Option<PathBuf>,
    /// Promote and rollback need a Kubernetes token whose user RBAC allows `create` on
    /// `plugins/promote` or `plugins/rollback` in group tephra.io (TokenReview + SubjectAccessReview).
    #[arg(long, requires = "admin")]
    admin_kubernetes_auth: bool,
    /// Time between scheduling cycles (Volcano's schedule-period).
    #[arg(long, default_value = "1s", value_parser = tephra::k8s::parse_duration)]
    period: Duration,
    /// How often each waiting PodGroup gets its predicted start (annotation
    /// tephra.io/estimated-start), worked out off the scheduling loop by simulating forward with
    /// every job's time limit (docs/batch.md); 0s turns it off.
    #[arg(long, default_value = "30s", value_parser = duration_or_off)]
    estimate_every: Duration,
    /// Campaign for a coordination.k8s.io Lease; only the holder schedules.
    #[arg(long)]
    leader_elect: bool,
    #[arg(long, default_value = "kube-system")]
    leader_elect_resource_namespace: String,
    /// The scheduler's own namespace, where admin decisions on plugin versions are kept (ConfigMap
    /// tephra-plugin-decisions). Default: $POD_NAMESPACE, else the in-cluster service account's
    /// namespace, else tephra-system.
    #[arg(long)]
    namespace: Option<String>,
    #[arg(long, default_value = "tephra")]
    leader_elect_resource_name: String,
    #[arg(long, default_value = "15s", value_parser = tephra::k8s::parse_duration)]
    leader_elect_lease_duration: Duration,
    #[arg(long, default_value = "10s", value_parser = tephra::k8s::parse_duration)]
    leader_elect_renew_deadline: Duration,
    #[arg(long, default_value = "2s", value_parser = tephra::k8s::parse_duration)]
    leader_elect_retry_period: Duration,
    /// This replica's identity in the Lease (default: $POD_NAME, else the host name and pid).
    #[arg(long)]
    identity: Option<String>,
    /// `eviction` (Eviction API, PodDisruptionBudgets respected) or `delete` (Volcano's plain delete).
    #[arg(long, value_enum, default_value_t = tephra::k8s::sink::EvictMode::Eviction)]
    evict_mode: tephra::k8s::sink::EvictMode,
    /// API writes in flight at once: binds and evictions, then Scheduled Events and PodGroup and
    /// pod statuses. 16 bound 5,000 pods in 12.2 s on the Volcano benchmark, 64 in 8.8 s.
    #[arg(long, default_value_t = std::num::NonZeroUsize::new(64).expect("64 is not zero"))]
    bind_concurrency: std::num::NonZeroUsize,
    /// HyperNodes from node labels, tiers from the highest down (`zone,spine,rack`), as Volcano's
    /// label discoverer makes them (kept in tephra, not written to the API), beside the API's.
    #[arg(long, value_delimiter = ',')]
    hypernode_labels: Vec<String>,
}

/// The scheduler both commands run: a config, the plugin library with the
/// components given one by one, and shadows.
struct Setup {
    config: SchedulerConfig,
    plugins_dir: Option<PathBuf>,
    plugins: Vec<PathBuf>,
    shadows: Vec<PathBuf>,
    rollback_after: u32,
}

impl Setup {
    fn scheduler(&self) -> Result<Scheduler> {
        let sandbox = tephra::wasm::Sandbox::configured(&self.config.limits);
        let mut library = Library::load_with(self.plugins_dir.as_deref(), sandbox)?;
        for s in &library.skipped {
            eprintln!("error: plugin file skipped: {s}");
        }
        // What each source declares, for drift: the directory's files as
        // loaded, then the flags (which win over them).
        let mut declared = Vec::new();
        if let Some(dir) = &self.plugins_dir {
            for f in tephra::wasm::library::wasm_files(dir)? {
                let origin = f.display().to_string();
                let Some(p) = library.names().filter_map(|n| library.get(n)).find(|p| p.origin_name() == origin) else {
                    continue;
                };
                declared.push(declaration(&format!("file {origin}"), p, false));
            }
        }
        for path in &self.plugins {
            let name = library.load_file(path)?;
            if let Some(p) = library.get(&name) {
                declared.push(declaration(&format!("--plugin {}", path.display()), p, false));
            }
        }
        let mut scheduler = Scheduler::new(self.config.clone(), &library);
        scheduler.rollback_after = self.rollback_after.max(1);
        for s in &self.shadows {
            let bytes = tephra::files::read(s)?;
            let name = scheduler.set_shadow(&bytes, &s.display().to_string())?;
            if let Some(p) = scheduler.shadows.get(&name) {
                declared.push(declaration(&format!("--shadow {}", s.display()), p, true));
            }
        }
        for d in declared {
            scheduler.intent.declare(&d.source.clone(), Some(d));
        }
        scheduler.intent.take_fresh();
        for p in &scheduler.missing_plugins {
            eprintln!("warning: plugin {p:?} is configured but not available; it is skipped");
        }
        scheduler.warn_unused_plugins();
        for n in std::mem::take(&mut scheduler.notices) {
            eprintln!("warning: {n}");
        }
        Ok(scheduler)
    }
}

/// What `source` declares by having loaded `p`.
fn declaration(source: &str, p: &tephra::wasm::WasmPlugin, shadow: bool) -> tephra::scheduler::Declared {
    tephra::scheduler::Declared {
        plugin: p.info().name.clone(),
        source: source.to_string(),
        version: p.hash().to_string(),
        shadow,
        key: format!("{source}@{}", p.hash()),
    }
}

/// What runs beside the loop: the plugin directory and config watches and
/// the admin surface.
fn attach<D: Driver>(
    lp: &mut Loop<D>,
    watch_dir: Option<&Path>,
    config: Option<&Path>,
    admin: Option<(&str, Admin)>,
) -> Result<()> {
    if let Some(dir) = watch_dir {
        lp.watch_plugins(dir)?;
    }
    if let Some(path) = config {
        lp.watch_config(path);
    }
    if let Some((addr, auth)) = admin {
        let (control, handle) = channel_pair();
        let closed = matches!(auth, Admin::Nobody);
        let bound = tephra::admin::serve(addr, handle, move || auth.authorizer())?;
        eprintln!("admin: listening on http://{bound}");
        if closed {
            eprintln!("admin: no authentication configured: promote and rollback are refused");
        }
        lp.control(control);
    }
    Ok(())
}

/// Who may promote and roll back through the admin surface.
enum Admin {
    Nobody,
    TokenFile(PathBuf),
    Kubernetes(tephra::k8s::review::Reviewer),
}

impl Admin {
    fn new(token_file: Option<PathBuf>) -> Admin {
        token_file.map_or(Admin::Nobody, Admin::TokenFile)
    }

    fn authorizer(self) -> Result<Arc<dyn Authorizer>> {
        Ok(match self {
            Admin::Nobody => Arc::new(auth::Nobody),
            Admin::TokenFile(p) => Arc::new(auth::TokenFile::read(&p)?),
            Admin::Kubernetes(r) => Arc::new(auth::Kubernetes(r)),
        })
    }
}

fn serve(s: Serve) -> Result<()> {
    let config = match &s.config {
        Some(p) => SchedulerConfig::read(p)?,
        None => SchedulerConfig::default_config(),
    };
    if s.watch && s.plugins_dir.is_none() {
        return Err(anyhow!("--watch needs --plugins (a directory of components to watch)"));
    }
    let setup = Setup {
        config,
        plugins_dir: s.plugins_dir.clone(),
        plugins: s.plugins,
        shadows: s.shadows,
        rollback_after: s.rollback_after,
    };
    let scheduler = setup.scheduler()?;
    if s.leader_elect_renew_deadline >= s.leader_elect_lease_duration {
        return Err(anyhow!("--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration"));
    }
    let identity = s.identity.or_else(|| std::env::var("POD_NAME").ok()).unwrap_or_else(|| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        format!("{}-{}", host.trim(), std::process::id())
    });
    let (estimate_every, period) = (s.estimate_every, s.period.as_secs_f64());
    let opts = tephra::k8s::Options {
        kubeconfig: s.kubeconfig,
        scheduler_name: s.scheduler_name,
        period: s.period,
        leader_elect: s
            .leader_elect
            .then(|| (s.leader_elect_resource_namespace.clone(), s.leader_elect_resource_name.clone())),
        namespace: s.namespace.clone().unwrap_or_else(own_namespace),
        presence: (!s.leader_elect).then_some((s.leader_elect_resource_namespace, s.leader_elect_resource_name)),
        lease: tephra::k8s::leader::Timing {
            duration: s.leader_elect_lease_duration,
            renew_deadline: s.leader_elect_renew_deadline,
            retry: s.leader_elect_retry_period,
        },
        identity,
        evict_mode: s.evict_mode,
        bind_concurrency: s.bind_concurrency.get(),
        hypernode_labels: s.hypernode_labels,
    };
    let Some((mut kube, cluster)) = tephra::k8s::Kube::connect(opts)? else { return Ok(()) };
    let mut scheduler = scheduler;
    adopt_decisions(&mut scheduler, kube.startup_decisions());
    let mut lp = Loop::new(cluster, scheduler, kube);
    // The config file is a mounted ConfigMap: its edits are always picked up.
    let watch_dir = s.plugins_dir.as_deref().filter(|_| s.watch);
    let auth = match s.admin_kubernetes_auth {
        true => Admin::Kubernetes(lp.driver.reviewer()),
        false => Admin::new(s.admin_token_file),
    };
    attach(&mut lp, watch_dir, s.config.as_deref(), s.admin.as_deref().map(|a| (a, auth)))?;
    let mut estimator = tephra::estimates::Estimator::new(estimate_every);
    loop {
        lp.step();
        let changes = estimator.tick(&lp, period);
        if !changes.is_empty() {
            lp.driver.annotate_estimates(&changes);
        }
        if !lp.driver.wait(&()) {
            break;
        }
    }
    lp.driver.shutdown();
    Ok(())
}

/// Where `tephra run` runs: $POD_NAMESPACE, the in-cluster service
/// account's namespace, or tephra-system (the chart's).
fn own_namespace() -> String {
    std::env::var("POD_NAMESPACE")
        .ok()
        .or_else(|| std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "tephra-system".into())
}

/// The admin decisions kept in the API server, made true before the first
/// cycle: a version rolled back stays out across a restart. A decision whose
/// declarations changed since (a file rewritten) is superseded and left.
fn adopt_decisions(scheduler: &mut Scheduler, decisions: Vec<tephra::k8s::decisions::Stored>) {
    for (act, bytes) in decisions {
        if let Some(newer) = scheduler.intent.superseded(&act) {
            tracing::info!("the decision on plugin {} ({}) is superseded: {newer}", act.plugin, act.describe());
            continue;
        }
        let compiled = bytes.and_then(|b| {
            let origin = format!("the decision on plugin {} (ConfigMap {})", act.plugin, tephra::k8s::decisions::NAME);
            tephra::wasm::WasmPlugin::load(&scheduler.library.runtime, &b, &origin)
                .map_err(|e| tracing::warn!("{e:#}"))
                .ok()
        });
        match scheduler.adopt(act.clone(), compiled) {
            Ok(()) => tracing::info!("adopted the decision on plugin {}: {}", act.plugin, act.describe()),
            Err(e) => tracing::warn!("cannot adopt the decision on plugin {}: {e:#}", act.plugin),
        }
    }
    for n in std::mem::take(&mut scheduler.notices) {
        tracing::info!("{n}");
    }
}

/// `--period` of the simulator: seconds, positive and at most a year.
/// A duration, or `0`/`0s` for off.
fn duration_or_off(s: &str) -> Result<Duration, String> {
    match tephra::duration::duration_ms(s) {
        Some(0) => Ok(Duration::ZERO),
        _ => tephra::k8s::parse_duration(s),
    }
}

fn period_seconds(s: &str) -> Result<f64, String> {
    let max = tephra::duration::DURATION_MAX_MS as f64 / 1000.0;
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x <= max => Ok(x),
        _ => Err(format!("{s:?} is not a number of seconds above 0 and at most {max}")),
    }
}

/// The scheduler config: the file given, else a ConfigMap among the objects, else the built-in one.
fn config_of(path: Option<&std::path::Path>, objects: &[manifest::Timed]) -> Result<SchedulerConfig> {
    Ok(match path {
        Some(path) => SchedulerConfig::read(path)?,
        None => objects
            .iter()
            .find_map(|t| match &t.object {
                Object::Config(c) => Some(c.clone()),
                _ => None,
            })
            .unwrap_or_else(SchedulerConfig::default_config),
    })
}

/// `tephra fidelity`'s arguments.
struct Fidelity {
    files: Vec<PathBuf>,
    kubeconfig: Option<PathBuf>,
    config: Option<PathBuf>,
    plugins_dir: Option<PathBuf>,
    period: f64,
    speed: f64,
    timeout: std::time::Duration,
    json: Option<PathBuf>,
    variant: Option<PathBuf>,
    report: Option<PathBuf>,
}

/// `tephra fidelity`: the workload in the simulator and on the cluster,
/// compared; the table on stdout.
fn fidelity(run: Fidelity) -> Result<bool> {
    use tephra::lab::fidelity;
    let Fidelity { files, kubeconfig, config, plugins_dir, period, speed, timeout, json, variant, report } = run;
    let mut objects = tephra::load(&files)?;
    let config_path = config;
    let mut config = config_of(config_path.as_deref(), &objects)?;
    // A variant's config and objects stand in for the workload's.
    let mut config_files = files.clone();
    if let Some(v) = &variant {
        let v = tephra::lab::Variant::from_file(v, &config)?;
        objects = v.objects(&objects);
        config = v.config.clone();
        config_files = vec![PathBuf::from(&v.origin)];
    }
    check_queues(&objects, &config, None)?;
    let mut jobs = Vec::new();
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "csv")) {
        jobs.extend(tephra::trace::read(&tephra::files::read_text(f)?, &f.display().to_string())?);
    }
    if jobs.is_empty() {
        return Err(anyhow!("no trace (.csv) among the files: fidelity replays a trace"));
    }
    eprintln!("fidelity: simulating {} jobs (period {period} s)", jobs.len());
    let (sim, summary) = fidelity::simulated(&objects, &config, plugins_dir.as_deref(), period)?;
    let nodes: Vec<_> =
        objects.iter().filter_map(|t| if let Object::Node(n) = &t.object { Some(n.clone()) } else { None }).collect();
    let queues: Vec<_> =
        objects.iter().filter_map(|t| if let Object::Queue(q) = &t.object { Some(q.clone()) } else { None }).collect();
    let opts = tephra::lab::replay::Options { kubeconfig: kubeconfig.clone(), speed, timeout };
    eprintln!("fidelity: {} nodes and {} queues on the cluster", nodes.len(), queues.len());
    tephra::lab::replay::prepare(&nodes, &queues, &opts)?;
    // tephra run on the cluster, with the same config, at the compressed period.
    let dir = std::env::temp_dir().join(format!("tephra-fidelity-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let log = dir.join("tephra-run.log");
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("run").arg("--period").arg(format!("{}ms", (period / speed * 1000.0).round() as u64));
    if let Some(text) = config_text(&config_files, config_path.as_deref())? {
        let conf = dir.join("scheduler.conf");
        std::fs::write(&conf, text)?;
        cmd.arg("--config").arg(&conf);
    }
    if let Some(k) = &kubeconfig {
        cmd.arg("--kubeconfig").arg(k);
    }
    let file = std::fs::File::create(&log)?;
    let mut child = cmd.stdout(file.try_clone()?).stderr(file).env("RUST_LOG", "tephra=info,warn").spawn()?;
    let started = std::time::Instant::now();
    while !tephra::files::read_text(&log).unwrap_or_default().contains("caches synced") {
        if let Some(st) = child.try_wait()? {
            return Err(anyhow!("tephra run exited ({st}); its log: {}", log.display()));
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            return Err(anyhow!("tephra run did not sync its caches in 120 s; its log: {}", log.display()));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    eprintln!("fidelity: replaying on the cluster at {speed}× (about {:.0} s)", sim_span(&jobs) / speed);
    let seen = tephra::lab::replay::replay(&jobs, &opts);
    let _ = child.kill();
    let _ = child.wait();
    let seen = seen?;
    let namespaces = jobs.iter().map(|j| (j.job.clone(), j.namespace.clone())).collect();
    let obs = fidelity::observed(&objects, &seen, &namespaces);
    let result = fidelity::compare(&sim, &obs, period);
    emit(&result.text());
    if let Some(path) = json {
        std::fs::write(&path, serde_json::to_string_pretty(&result)? + "\n")
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    }
    let met = result.goals_met();
    if let Some(path) = report {
        let workload = files.iter().chain(&variant).map(|p| p.display().to_string()).collect();
        let comparison = tephra::lab::Comparison { workload, variants: vec![summary], fidelity: Some(result) };
        let json = comparison.write(&path)?;
        eprintln!("fidelity: report in {} (figures in {})", path.display(), json.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(met)
}

/// The scheduler config's text for `tephra run`: the file given, else the
/// `volcano-scheduler.conf` of a ConfigMap in the manifests (none: the
/// built-in config on both sides).
fn config_text(files: &[PathBuf], path: Option<&std::path::Path>) -> Result<Option<String>> {
    if let Some(p) = path {
        return Ok(Some(tephra::files::read_text(p)?));
    }
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml")) {
        let text = tephra::files::read_text(f)?;
        for doc in yaml_serde::Deserializer::from_str(&text) {
            let Ok(v) = <yaml_serde::Value as serde::Deserialize>::deserialize(doc) else { continue };
            if v["kind"].as_str() == Some("ConfigMap") {
                if let Some(conf) = v["data"]["volcano-scheduler.conf"].as_str() {
                    return Ok(Some(conf.to_string()));
                }
            }
        }
    }
    Ok(None)
}

/// First submit to the last submit plus its run time, trace seconds.
fn sim_span(jobs: &[tephra::trace::TraceJob]) -> f64 {
    let first = jobs.iter().map(|j| j.submit).fold(f64::INFINITY, f64::min);
    jobs.iter().map(|j| j.submit + j.duration).fold(0.0, f64::max) - first.min(0.0)
}

/// `tephra estimate`: a line per waiting job with its predicted start.
fn estimate(
    files: Vec<PathBuf>,
    config: Option<PathBuf>,
    plugins_dir: Option<PathBuf>,
    period: f64,
    horizon: usize,
) -> Result<()> {
    let objects = tephra::load(&files)?;
    let config = config_of(config.as_deref(), &objects)?;
    check_queues(&objects, &config, None)?;
    let later = objects.iter().filter(|t| t.at > 0.0).count();
    let setup = Setup { config, plugins_dir, plugins: Vec::new(), shadows: Vec::new(), rollback_after: 3 };
    let options = Options { period, ..Default::default() };
    let mut sim = Simulation::new(objects, setup.scheduler()?, options);
    // A snapshot's clock is the wall clock: start from its latest pod start.
    let now = sim.cluster.pods.iter().filter_map(|p| p.started).max().map_or(0.0, |ms| (ms as f64 / 1000.0).max(0.0));
    sim.driver.time = now;
    let estimates = sim.estimates(horizon);
    if later > 0 {
        println!("({later} objects arriving later are not counted)");
    }
    if estimates.is_empty() {
        println!("no job is waiting");
    }
    let width = estimates.iter().map(|e| e.job.len()).max().unwrap_or(0);
    for e in estimates {
        let when = match e.start {
            None => format!("not within {horizon} cycles (something ahead of it has no time limit)"),
            Some(at) if now > 1e9 => {
                format!("{} (in {}s)", tephra::manifest::format_time((at * 1000.0) as i64), at - now)
            }
            Some(at) => format!("t={at}s"),
        };
        println!("{:<width$}  {when}", e.job);
    }
    Ok(())
}

fn simulate(run: Run) -> Result<()> {
    let Run {
        files,
        config,
        plugins_dir,
        plugins,
        shadows,
        watch,
        admin,
        admin_token_file,
        realtime,
        rollback_after,
        hypernode_labels,
        cycles,
        skip_idle,
        start_on_bind,
        live_clock,
        compare,
        report,
        period,
        output,
    } = run;
    let trace = files.iter().any(|f| f.extension().is_some_and(|e| e == "csv"));
    let lab = !compare.is_empty() || report.is_some();
    let long = trace || lab;
    let max_cycles = cycles.unwrap_or(if long { usize::MAX } else { 50 });
    let options =
        Options { max_cycles, period, hypernode_labels, skip_idle: skip_idle || long, start_on_bind, live_clock };
    let config_path = config;
    let files_list =
        |f: &[std::path::PathBuf]| f.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let objects = if files.is_empty() { manifest::parse(DEMO, "<demo cluster>")? } else { tephra::load(&files)? };
    let config = config_of(config_path.as_deref(), &objects)?;
    // A comparison checks each variant's queues under its own config.
    if !lab {
        check_queues(&objects, &config, None)?;
    }
    // The HyperNodes of the whole run must form a tree (nothing is half applied).
    let hypernodes: Vec<_> = objects
        .iter()
        .filter_map(|t| match &t.object {
            Object::HyperNode(h) => Some(h.clone()),
            _ => None,
        })
        .collect();
    let nodes: Vec<_> = objects
        .iter()
        .filter_map(|t| match &t.object {
            Object::Node(n) => Some(n),
            _ => None,
        })
        .collect();
    if let Err(e) = tephra::topology::Tree::build(&hypernodes, &nodes) {
        let origin = if files.is_empty() { "<demo cluster>".to_string() } else { files_list(&files) };
        return Err(anyhow!("{origin}: {e}"));
    }
    if watch && plugins_dir.is_none() && config_path.is_none() {
        return Err(anyhow!("--watch needs --plugins-dir or --config to watch"));
    }
    if lab {
        if watch || realtime || admin.is_some() || !plugins.is_empty() || !shadows.is_empty() {
            return Err(anyhow!(
                "--compare and --report run batch: without --watch, --realtime, --admin, --plugin, --shadow"
            ));
        }
        let workload = if files.is_empty() {
            vec!["<demo cluster>".to_string()]
        } else {
            files.iter().map(|p| p.display().to_string()).collect()
        };
        return lab_run(objects, config, &compare, workload, report, plugins_dir, options, output);
    }
    let setup = Setup { config, plugins_dir: plugins_dir.clone(), plugins, shadows, rollback_after };
    let scheduler = setup.scheduler()?;
    let live = realtime || watch || admin.is_some();
    let mut sim = Simulation::new(objects, scheduler, options);
    if live {
        // Long-running: swaps, config edits and admin commands land between
        // cycles, paced in real time, until --cycles.
        sim.driver.stop_when_settled = false;
        sim.driver.realtime = true;
        let dir = plugins_dir.as_deref().filter(|_| watch);
        let config = config_path.as_deref().filter(|_| watch);
        let auth = Admin::new(admin_token_file);
        attach(&mut sim.0, dir, config, admin.as_deref().map(|a| (a, auth)))?;
        let mut prev: Option<tephra::report::CycleReport> = None;
        let mut reports = Vec::new();
        sim.0.run(|r| {
            if let Output::Text = output {
                emit(&r.text(prev.as_ref()));
            }
            prev = Some(r.clone());
            reports.push(r.clone());
        });
        if let Output::Json = output {
            emit(&(serde_json::to_string_pretty(&reports)? + "\n"));
        }
        return Ok(());
    }
    let reports = sim.run();
    let mut text = String::new();
    match output {
        Output::Json => text = serde_json::to_string_pretty(&reports)? + "\n",
        Output::Text => {
            text += &format!(
                "tephra simulate: {} nodes, {} queues, actions [{}], tiers {}\n",
                sim.cluster.nodes.len(),
                sim.cluster.queues.len(),
                sim.scheduler.config.actions.join(", "),
                sim.scheduler
                    .config
                    .tiers
                    .iter()
                    .map(|t| format!("[{}]", t.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let mut prev = None;
            for r in &reports {
                text += &r.text(prev);
                prev = Some(r);
            }
            let last = reports.last().map(|r| r.cycle).unwrap_or(0);
            let settled = sim.settled_after(reports.last());
            text += &tephra::report::waits_text(&reports);
            text += &format!("{} after {last} cycles\n", if settled { "settled" } else { "stopped (cycle limit)" });
        }
    }
    emit(&text);
    Ok(())
}

/// The Queues among `objects` checked against `config` (Volcano's rules and
/// what the configured quota plugin reads): the first error fails the run,
/// warnings are printed; `origin` names a comparison's variant.
fn check_queues(objects: &[manifest::Timed], config: &SchedulerConfig, origin: Option<&str>) -> Result<()> {
    let queues: Vec<tephra::model::Queue> = objects
        .iter()
        .filter_map(|t| match &t.object {
            Object::Queue(q) => Some(q.clone()),
            _ => None,
        })
        .collect();
    let findings = tephra::validate::queues(&queues, config);
    let at = origin.map(|o| format!("{o}: ")).unwrap_or_default();
    if let Some(e) = findings.errors.first() {
        return Err(anyhow!("{at}{e}"));
    }
    for w in &findings.warnings {
        eprintln!("warning: {at}{w}");
    }
    Ok(())
}

/// `simulate --compare/--report`: each variant in turn, with progress on
/// stderr, then the figures (and the report files).
#[allow(clippy::too_many_arguments)]
fn lab_run(
    objects: Vec<manifest::Timed>,
    config: SchedulerConfig,
    compare: &[PathBuf],
    workload: Vec<String>,
    report: Option<PathBuf>,
    plugins_dir: Option<PathBuf>,
    options: Options,
    output: Output,
) -> Result<()> {
    use tephra::lab::{self, Variant};
    let mut variants = Vec::new();
    if compare.len() < 2 {
        variants.push(Variant::base(config.clone()));
    }
    for p in compare {
        variants.push(Variant::from_file(p, &config)?);
    }
    lab::check_names(&variants)?;
    for v in &variants {
        check_queues(&v.objects(&objects), &v.config, Some(&v.origin))?;
    }
    let mut summaries = Vec::new();
    for v in &variants {
        let mut bar = Progress::new(&v.name);
        let s = lab::run(v, &objects, plugins_dir.as_deref(), options.clone(), &mut |_, t, end| bar.tick(t, end))?;
        bar.finish(s.cycles, s.simulated);
        summaries.push(s);
    }
    let comparison = lab::Comparison { workload, variants: summaries, fidelity: None };
    match output {
        Output::Text => emit(&comparison.text()),
        Output::Json => emit(&(serde_json::to_string_pretty(&comparison)? + "\n")),
    }
    if let Some(path) = report {
        let json = comparison.write(&path)?;
        eprintln!("report: {} (figures: {})", path.display(), json.display());
    }
    Ok(())
}

/// A run's progress on stderr: a bar on a terminal, a line per tenth
/// otherwise.
struct Progress {
    name: String,
    bar: Option<indicatif::ProgressBar>,
    started: std::time::Instant,
    tenth: u64,
}

impl Progress {
    fn new(name: &str) -> Self {
        let bar = std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
            let b = indicatif::ProgressBar::new(1000);
            let style = indicatif::ProgressStyle::with_template("{prefix:>12} [{bar:40}] {percent:>3}% {msg}")
                .map(|s| s.progress_chars("=> "))
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            b.set_style(style);
            b.set_prefix(name.to_string());
            b
        });
        Progress { name: name.into(), bar, started: std::time::Instant::now(), tenth: 0 }
    }

    fn tick(&mut self, t: f64, end: f64) {
        let done = if end > 0.0 { (t / end).clamp(0.0, 1.0) } else { 1.0 };
        match &self.bar {
            Some(b) => {
                b.set_position((done * 1000.0) as u64);
                b.set_message(format!("t={}", tephra::lab::seconds(t)));
            }
            None if (done * 10.0) as u64 > self.tenth => {
                self.tenth = (done * 10.0) as u64;
                eprintln!("{}: {}% of arrivals (t={})", self.name, self.tenth * 10, tephra::lab::seconds(t));
            }
            None => {}
        }
    }

    fn finish(&self, cycles: usize, simulated: f64) {
        let wall = self.started.elapsed().as_secs_f64();
        let line = format!(
            "{}: {cycles} cycles, {} simulated in {wall:.1}s ({:.0} simulated seconds per second)",
            self.name,
            tephra::lab::seconds(simulated),
            simulated / wall.max(1e-9)
        );
        match &self.bar {
            Some(b) => b.finish_with_message(line),
            None => eprintln!("{line}"),
        }
    }
}

/// `tephra snapshot`.
fn snapshot(
    kubeconfig: Option<PathBuf>,
    scheduler_name: String,
    config_map: &str,
    output: Option<PathBuf>,
) -> Result<()> {
    let (ns, name) = config_map
        .split_once('/')
        .filter(|(n, m)| !n.is_empty() && !m.is_empty())
        .ok_or_else(|| anyhow!("--config-map: expected NAMESPACE/NAME, got {config_map:?}"))?;
    let opts = tephra::k8s::snapshot::Options { kubeconfig, scheduler_name, config_map: (ns.into(), name.into()) };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let text = rt.block_on(tephra::k8s::snapshot::take(&opts))?;
    match output {
        Some(path) => std::fs::write(&path, text).map_err(|e| anyhow!("{}: {e}", path.display())),
        None => {
            emit(&text);
            Ok(())
        }
    }
}

/// `trace alibaba` and `trace generate`.
fn trace_command(command: TraceCommand) -> Result<()> {
    use tephra::trace::{self, alibaba, generate};
    let jobs = match command {
        TraceCommand::Alibaba { dir, queue_by, queue } => {
            let by = match queue_by.as_str() {
                "one" => alibaba::QueueBy::One,
                "user" => alibaba::QueueBy::User,
                "gpu-type" => alibaba::QueueBy::GpuType,
                other => return Err(anyhow!("--queue-by: {other:?} is not one of one, user, gpu-type")),
            };
            let (jp, tp) = (dir.join("pai_job_table.csv"), dir.join("pai_task_table.csv"));
            let (jt, tt) = (tephra::files::read_text(&jp)?, tephra::files::read_text(&tp)?);
            let (js, ts) = (jp.display().to_string(), tp.display().to_string());
            let out = alibaba::convert((&jt, &js), (&tt, &ts), by, &queue)?;
            eprintln!("{} jobs; {} task rows left out (no times)", out.jobs.len(), out.skipped_tasks);
            out.jobs
        }
        TraceCommand::Generate { jobs, days, queues, seed, gpu_jobs, time_limit_factor } => {
            if !(days > 0.0 && days.is_finite()) {
                return Err(anyhow!("--days: must be more than 0"));
            }
            if !(0.0..=1.0).contains(&gpu_jobs) {
                return Err(anyhow!("--gpu-jobs: must be from 0 to 1"));
            }
            if time_limit_factor.is_some_and(|f| !(f >= 1.0 && f.is_finite())) {
                return Err(anyhow!(
                    "--time-limit-factor: must be 1 or more (a limit below the run time ends every job)"
                ));
            }
            let limit_factor = time_limit_factor;
            generate::generate(&generate::Shape { jobs, span: days * 86400.0, queues, seed, gpu_jobs, limit_factor })
        }
    };
    let mut buf = Vec::new();
    trace::write(&jobs, &mut buf)?;
    emit(&String::from_utf8_lossy(&buf));
    Ok(())
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn emit(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn conformance_run(files: Vec<PathBuf>, plugins_dir: Option<PathBuf>) -> Result<bool> {
    scenarios(&files, &Library::load(plugins_dir.as_deref())?, false)
}

/// `plugin test`: the scenarios with the component as the live version of
/// the plugin it names, beside the built-in ones, in a sandbox with the
/// cluster's limits; its faults fail their cases.
fn plugin_test(
    file: PathBuf,
    files: Vec<PathBuf>,
    call_deadline_ms: Option<u64>,
    memory_mib: Option<u64>,
    json: bool,
) -> Result<bool> {
    let mut sandbox = Sandbox::default();
    if let Some(ms) = call_deadline_ms {
        sandbox.call_deadline = std::time::Duration::from_millis(ms);
    }
    if let Some(mib) = memory_mib {
        sandbox.memory_bytes = (mib as usize) << 20;
    }
    let mut library = Library::load_with(None, sandbox.clone())?;
    let name = library.load_file(&file)?;
    let p = library.get(&name).expect("just loaded");
    let (version, contract) = (p.info().version.clone(), p.info().contract.clone());
    let mut cases = Vec::new();
    for f in &files {
        for o in conformance::run_file_for(f, &library, Some(&name))? {
            cases.push((f.display().to_string(), o));
        }
    }
    let (pass, fail, skip) = totals(cases.iter().map(|(_, o)| o));
    let ok = fail == 0 && skip == 0 && pass > 0;
    if json {
        let cases: Vec<serde_json::Value> = cases
            .iter()
            .map(|(f, o)| {
                let (verdict, detail) = match &o.verdict {
                    Verdict::Pass => ("pass", ""),
                    Verdict::Fail(why) => ("fail", why.as_str()),
                    Verdict::Skip(why) => ("skip", why.as_str()),
                };
                serde_json::json!({"file": f, "name": o.name, "verdict": verdict, "detail": detail,
                    "millis": (o.millis * 10.0).round() / 10.0})
            })
            .collect();
        let report = serde_json::json!({
            "component": file.display().to_string(), "plugin": name, "version": version, "contract": contract,
            "call_deadline_ms": sandbox.call_deadline.as_millis() as u64, "memory_mib": sandbox.memory_bytes >> 20,
            "passed": pass, "failed": fail, "skipped": skip, "ok": ok, "cases": cases,
        });
        emit(&format!("{}\n", serde_json::to_string_pretty(&report)?));
        return Ok(ok);
    }
    emit(&format!("{}: plugin {name:?} version {version} (contract {contract})\n", file.display()));
    // A case that cannot run proves nothing about the plugin under test.
    emit(&lines(cases.iter().map(|(_, o)| o)));
    Ok(ok)
}

/// One line per scenario of `files`, and the totals; whether all that ran
/// passed (and, with `strict`, none was skipped).
fn scenarios(files: &[PathBuf], library: &Library, strict: bool) -> Result<bool> {
    let mut outcomes = Vec::new();
    for f in files {
        outcomes.extend(conformance::run_file(f, library)?);
    }
    emit(&lines(outcomes.iter()));
    let (pass, fail, skip) = totals(outcomes.iter());
    Ok(fail == 0 && pass > 0 && !(strict && skip > 0))
}

/// (passed, failed, skipped).
fn totals<'a>(outcomes: impl Iterator<Item = &'a conformance::ScenarioResult>) -> (usize, usize, usize) {
    outcomes.fold((0, 0, 0), |(p, f, s), o| match o.verdict {
        Verdict::Pass => (p + 1, f, s),
        Verdict::Fail(_) => (p, f + 1, s),
        Verdict::Skip(_) => (p, f, s + 1),
    })
}

/// A line per scenario and the totals; a run where nothing ran says so.
fn lines<'a>(outcomes: impl Iterator<Item = &'a conformance::ScenarioResult> + Clone) -> String {
    let mut text = String::new();
    for o in outcomes.clone() {
        text += &match &o.verdict {
            Verdict::Pass => format!("pass  {}\n", o.name),
            Verdict::Fail(why) => format!("FAIL  {}: {why}\n", o.name),
            Verdict::Skip(why) => format!("skip  {}: {why}\n", o.name),
        };
    }
    let (pass, fail, skip) = totals(outcomes);
    text += &format!("{pass} passed, {fail} failed, {skip} skipped\n");
    // Nothing run is nothing proven: a run that only skipped fails.
    if pass + fail == 0 {
        text += "FAIL: no scenario ran\n";
    }
    text
}

fn check(file: PathBuf) -> Result<()> {
    let bytes = tephra::files::read(&file)?;
    check_bytes(&file, &bytes)
}

/// `plugin check` of a component already read from `file`.
fn check_bytes(file: &Path, bytes: &[u8]) -> Result<()> {
    let sandbox = Sandbox::default();
    let runtime = Runtime::new(sandbox.clone())?;
    let before = runtime.disk_cache_reads();
    let p = WasmPlugin::load(&runtime, bytes, &file.display().to_string())?;
    let info = p.info();
    let mut text =
        format!("{}: plugin {:?} version {} (contract {})\n", file.display(), info.name, info.version, info.contract);
    text += &format!("  content hash {}\n", p.hash());
    let dir = sandbox.cache_dir.as_ref().map_or(String::new(), |d| d.display().to_string());
    text += &match (before, runtime.disk_cache_reads()) {
        (Some((hits, _)), Some((now, _))) if now > hits => format!("  compiled code read from the disk cache {dir}\n"),
        (Some(_), Some(_)) => format!("  compiled now, kept in the disk cache {dir}\n"),
        _ => "  compiled now (no disk cache)\n".to_string(),
    };
    for pt in &info.points {
        text += &format!("  implements {}\n", tephra::policy::point_name(*pt));
    }
    for i in p.imports() {
        text += &format!("  imports    {i}\n");
    }
    emit(&text);
    Ok(())
}

/// Checks the component (as `plugin check`), then pushes it.
fn push(file: PathBuf, reference: &str, insecure: bool, username: Option<String>) -> Result<()> {
    let bytes = tephra::files::read(&file)?;
    check_bytes(&file, &bytes)?;
    let basic = match username {
        None => None,
        Some(u) => {
            let p = std::env::var("TEPHRA_REGISTRY_PASSWORD")
                .map_err(|_| anyhow!("--username needs the password in $TEPHRA_REGISTRY_PASSWORD"))?;
            Some((u, p))
        }
    };
    let creds = tephra::k8s::oci::Credentials { basic };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let pinned = rt.block_on(tephra::k8s::oci::push(&bytes, reference, &creds, insecure))?;
    emit(&format!(
        "pushed {}
{pinned}
",
        file.display()
    ));
    Ok(())
}

/// `RUST_LOG`, else WARN and above. kube-runtime's watcher logs each retry
/// of a failing watch at WARN as a debug dump of the API's Status; tephra
/// logs the failure itself, once, as one line (`tephra_kube::Retrying`), so
/// the watcher's own lines are left to `RUST_LOG=kube_runtime=…`.
fn log_filter() -> tracing_subscriber::EnvFilter {
    let wanted = std::env::var("RUST_LOG").unwrap_or_default();
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    // wasmtime's cache worker warns about the lock files of other processes
    // sharing the compiled-code cache: harmless, and not news.
    for (target, directive) in
        [("wasmtime_internal_cache", "wasmtime_internal_cache=error"), ("kube_runtime", "kube_runtime::watcher=error")]
    {
        if !wanted.contains(target) {
            if let Ok(d) = directive.parse() {
                filter = filter.add_directive(d);
            }
        }
    }
    filter
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        // wasmtime's cache worker warns about the lock files of other
        // processes sharing the compiled-code cache: harmless, and not news.
        .with_env_filter(log_filter())
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Simulate(run) => simulate(run).map(|_| true),
        Command::Run(s) => serve(s).map(|_| true),
        Command::Trace { command } => trace_command(command).map(|_| true),
        Command::Fidelity { files, kubeconfig, config, plugins_dir, period, speed, timeout, json, variant, report } => {
            let run =
                Fidelity { files, kubeconfig, config, plugins_dir, period, speed, timeout, json, variant, report };
            fidelity(run).map(|ok| ok || true)
        }
        Command::Estimate { files, config, plugins_dir, period, horizon } => {
            estimate(files, config, plugins_dir, period, horizon).map(|_| true)
        }
        Command::Snapshot { kubeconfig, scheduler_name, config_map, output } => {
            snapshot(kubeconfig, scheduler_name, &config_map, output).map(|_| true)
        }
        Command::Conformance { files, plugins_dir } => conformance_run(files, plugins_dir),
        Command::Plugin { command: PluginCommand::Check { file } } => check(file).map(|_| true),
        Command::Plugin { command: PluginCommand::Test { file, scenarios, call_deadline_ms, memory_mib, json } } => {
            plugin_test(file, scenarios, call_deadline_ms, memory_mib, json)
        }
        Command::Plugin { command: PluginCommand::Push { file, reference, insecure, username } } => {
            push(file, &reference, insecure, username).map(|_| true)
        }
        Command::Plugin { command: PluginCommand::Componentize { core, wit, world, output } } => {
            tephra::componentize::componentize(&core, &wit, &world)
                .and_then(|bytes| {
                    std::fs::write(&output, bytes).with_context(|| format!("{}: cannot write", output.display()))
                })
                .map(|()| true)
        }
        Command::Plugin { command: PluginCommand::New { name, lang, dir } } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
            tephra::scaffold::new_plugin(&name, &lang, &dir).map(|files| {
                let how = match lang.as_str() {
                    "rust" => "cargo test; cargo build --target wasm32-wasip2 --release",
                    _ => "./build.sh out   (./test.sh builds it and checks its decisions)",
                };
                emit(&format!(
                    "created {} ({lang}): {}\nnext: cd {} && {how}\n",
                    dir.display(),
                    files.join(", "),
                    dir.display()
                ));
                true
            })
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::from(2)
        }
    }
}
