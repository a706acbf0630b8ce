//! The `tephra` command.

use anyhow::{anyhow, Result};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use tephra::config::SchedulerConfig;
use tephra::conformance::{self, Verdict};
use tephra::manifest::{self, Object};
use tephra::plugin::Backend;
use tephra::scheduler::{Library, Scheduler};
use tephra::simulate::{Options, Simulation};
use tephra::wasm::{Runtime, Sandbox, WasmPlugin};

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
    Simulate {
        /// Manifests: Node, Pod, Queue, PodGroup, Volcano Job, PriorityClass, scheduler ConfigMap.
        files: Vec<PathBuf>,
        /// Scheduler config in Volcano's format (default: a ConfigMap in the files, else built-in).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Directory of `<plugin>.wasm` components overriding the built-in ones.
        #[arg(long)]
        plugins_dir: Option<PathBuf>,
        /// Stop after this many cycles.
        #[arg(long, default_value_t = 50)]
        cycles: usize,
        /// Simulated seconds per cycle.
        #[arg(long, default_value_t = 1.0)]
        period: f64,
        #[arg(long, value_enum, default_value_t = Output::Text)]
        output: Output,
    },
    /// Run conformance scenario files; exits non-zero on any failure.
    Conformance {
        files: Vec<PathBuf>,
        #[arg(long)]
        plugins_dir: Option<PathBuf>,
    },
    /// Work with plugin components.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Validate a component offline and print what it declares.
    Check { file: PathBuf },
}

fn simulate(
    files: Vec<PathBuf>,
    config: Option<PathBuf>,
    plugins_dir: Option<PathBuf>,
    options: Options,
    output: Output,
) -> Result<()> {
    let objects = if files.is_empty() { manifest::parse(DEMO, "<demo cluster>")? } else { manifest::load(&files)? };
    let config = match config {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|e| anyhow!("{}: {e}", path.display()))?;
            SchedulerConfig::parse(&text, &path.display().to_string())?
        }
        None => objects
            .iter()
            .find_map(|t| match &t.object {
                Object::Config(c) => Some(c.clone()),
                _ => None,
            })
            .unwrap_or_else(SchedulerConfig::default_config),
    };
    let queues: Vec<tephra::model::Queue> = objects
        .iter()
        .filter_map(|t| match &t.object {
            Object::Queue(q) => Some(q.clone()),
            _ => None,
        })
        .collect();
    let findings = tephra::validate::queues(&queues, &config);
    if let Some(e) = findings.errors.first() {
        return Err(anyhow!("{e}"));
    }
    for w in &findings.warnings {
        eprintln!("warning: {w}");
    }
    let library = Library::load(plugins_dir.as_deref())?;
    let scheduler = Scheduler::new(config, &library);
    for p in &scheduler.missing_plugins {
        eprintln!("warning: plugin {p:?} is configured but not available; it is skipped");
    }
    for a in &scheduler.missing_actions {
        eprintln!("warning: action {a:?} is configured but not implemented yet; it is skipped");
    }
    let mut sim = Simulation::new(objects, scheduler, options);
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
            text += &format!("{} after {last} cycles\n", if settled { "settled" } else { "stopped (cycle limit)" });
        }
    }
    emit(&text);
    Ok(())
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn emit(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn conformance_run(files: Vec<PathBuf>, plugins_dir: Option<PathBuf>) -> Result<bool> {
    let library = Library::load(plugins_dir.as_deref())?;
    let (mut pass, mut fail, mut skip) = (0, 0, 0);
    let mut text = String::new();
    for f in &files {
        for o in conformance::run_file(f, &library)? {
            match &o.verdict {
                Verdict::Pass => {
                    pass += 1;
                    text += &format!("pass  {}\n", o.name);
                }
                Verdict::Fail(why) => {
                    fail += 1;
                    text += &format!("FAIL  {}: {why}\n", o.name);
                }
                Verdict::Skip(why) => {
                    skip += 1;
                    text += &format!("skip  {}: {why}\n", o.name);
                }
            }
        }
    }
    text += &format!("{pass} passed, {fail} failed, {skip} skipped\n");
    emit(&text);
    Ok(fail == 0)
}

fn check(file: PathBuf) -> Result<()> {
    let bytes = std::fs::read(&file).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    let runtime = Runtime::new(Sandbox::default())?;
    let p = WasmPlugin::load(&runtime, &bytes, &file.display().to_string())?;
    let info = p.info();
    let mut text =
        format!("{}: plugin {:?} version {} (contract {})\n", file.display(), info.name, info.version, info.contract);
    for pt in &info.points {
        text += &format!("  implements {}\n", tephra::policy::point_name(*pt));
    }
    emit(&text);
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Simulate { files, config, plugins_dir, cycles, period, output } => {
            simulate(files, config, plugins_dir, Options { max_cycles: cycles, period }, output).map(|_| true)
        }
        Command::Conformance { files, plugins_dir } => conformance_run(files, plugins_dir),
        Command::Plugin { command: PluginCommand::Check { file } } => check(file).map(|_| true),
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
