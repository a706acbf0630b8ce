//! The scheduler config file, in Volcano's format (`actions`, `tiers`,
//! `configurations`), with its enable-switch defaulting rules.

use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use tephra_model::duration::duration_ms;
use yaml_serde::Value;

/// The actions tephra has, by the names a config gives them: the one list
/// (the actions crate maps each to its code with an exhaustive match).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    /// `enqueue`: admits Pending jobs.
    Enqueue,
    /// `elect`: chooses the big job nodes are reserved for.
    Elect,
    /// `allocate`: places pending tasks, gang by gang.
    Allocate,
    /// `backfill`: places best-effort tasks.
    Backfill,
    /// `preempt`: a starving job evicts lower-priority work of its queue.
    Preempt,
    /// `reclaim`: a queue under its share takes back from others.
    Reclaim,
    /// `shuffle`: evicts what victim-task plugins select.
    Shuffle,
    /// `reserve`: locks nodes for elected jobs and reserving queues.
    Reserve,
    /// `gangpreempt`: preemption of whole gangs in one domain.
    GangPreempt,
    /// `gangreclaim`: reclaim of whole gangs in one domain.
    GangReclaim,
}

impl ActionKind {
    /// Every action, in the order they are listed.
    pub const ALL: [ActionKind; 10] = [
        ActionKind::Enqueue,
        ActionKind::Elect,
        ActionKind::Allocate,
        ActionKind::Backfill,
        ActionKind::Preempt,
        ActionKind::Reclaim,
        ActionKind::Shuffle,
        ActionKind::Reserve,
        ActionKind::GangPreempt,
        ActionKind::GangReclaim,
    ];

    /// The name in `actions: "..."`.
    pub fn name(self) -> &'static str {
        match self {
            ActionKind::Enqueue => "enqueue",
            ActionKind::Elect => "elect",
            ActionKind::Allocate => "allocate",
            ActionKind::Backfill => "backfill",
            ActionKind::Preempt => "preempt",
            ActionKind::Reclaim => "reclaim",
            ActionKind::Shuffle => "shuffle",
            ActionKind::Reserve => "reserve",
            ActionKind::GangPreempt => "gangpreempt",
            ActionKind::GangReclaim => "gangreclaim",
        }
    }

    /// The action of this name, if tephra has it.
    pub fn parse(name: &str) -> Option<ActionKind> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// The built-in config used when none is given.
pub const DEFAULT_CONFIG: &str = include_str!("../../../../examples/scheduler.yaml");

/// Every enable switch Volcano's config accepts (its own spellings).
pub const SWITCHES: [&str; 25] = [
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
];

/// One plugin entry of a tier.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PluginConf {
    /// The plugin's name (a built-in, or a loaded component's).
    pub name: String,
    /// Arguments rendered as strings, in file order.
    pub arguments: Vec<(String, String)>,
    /// Switches given explicitly.
    pub switches: BTreeMap<String, bool>,
    /// tephra's `faultPolicy: skip`: while the plugin is down (it failed to
    /// open, trapped or answered out of contract) it abstains. The default,
    /// `fail-closed`, makes it refuse at every gate it implements (no node,
    /// not allocatable, not ready, overused, no victims; the table in
    /// docs/operations.md), so crashing a policy never bypasses it.
    pub fault_skip: bool,
}

impl PluginConf {
    /// An entry naming `name`, with no arguments and no switches set.
    pub fn new(name: &str) -> Self {
        PluginConf { name: name.into(), ..Default::default() }
    }

    /// The arguments a plugin receives: its `arguments`, plus
    /// `enableHierarchy` when the switch is set (Volcano plugins read that
    /// switch themselves; ours get it as an argument).
    pub fn plugin_arguments(&self) -> Vec<(String, String)> {
        let mut args = self.arguments.clone();
        if let Some(on) = self.switches.get("enableHierarchy") {
            if !args.iter().any(|(k, _)| k == "enableHierarchy") {
                args.push(("enableHierarchy".into(), on.to_string()));
            }
        }
        args
    }

    /// Whether `switch` is on. From a config file an unset switch is on
    /// (except `enableHierarchy`); in programmatic tiers it is off.
    pub fn switch(&self, switch: &str, unset_is_on: bool) -> bool {
        match self.switches.get(switch) {
            Some(v) => *v,
            None => unset_is_on && switch != "enableHierarchy",
        }
    }
}

/// A parsed scheduler config.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedulerConfig {
    /// `actions`, in order.
    pub actions: Vec<String>,
    /// `tiers`: the plugins of each, in order.
    pub tiers: Vec<Vec<PluginConf>>,
    /// Per-action arguments (`configurations:`).
    pub action_args: BTreeMap<String, BTreeMap<String, String>>,
    /// Config-file semantics: unset switches are on.
    pub unset_is_on: bool,
    /// tephra's `limits:` section: the plugin sandbox's knobs.
    pub limits: Limits,
}

/// The plugin sandbox's limits as configured (`limits:`, tephra-specific);
/// unset ones keep their defaults (docs/operations.md).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Limits {
    /// `callDeadline`: one call's wall-clock time, ms.
    pub call_deadline_ms: Option<i64>,
    /// `cycleBudget`: a plugin's time per cycle (open, events, calls), ms.
    pub cycle_budget_ms: Option<i64>,
    /// `memoryPerPlugin`: one instance's linear memory, bytes.
    pub memory_per_plugin: Option<usize>,
    /// `memoryTotal`: all instances' linear memory together, bytes.
    pub memory_total: Option<usize>,
}

impl Limits {
    fn parse(v: &Value, origin: &str) -> Result<Self> {
        let m = v.as_mapping().ok_or_else(|| anyhow!("{origin}: limits: expected a mapping"))?;
        let mut l = Limits::default();
        for (k, v) in m {
            let key = k.as_str().unwrap_or("?");
            let at = format!("{origin}: limits.{key}");
            let text = scalar_string(v).ok_or_else(|| anyhow!("{at}: expected a scalar"))?;
            let duration = || match duration_ms(&text) {
                Some(ms) if ms > 0 => Ok(Some(ms)),
                _ => Err(anyhow!("{at}: {text:?} is not a positive duration of at most a year (like 2s, 500ms)")),
            };
            // At least 1 MiB, and less than the 4 GiB a 32-bit memory can reach.
            let bytes = || match tephra_model::resource::parse_quantity(&text) {
                Ok(b) if (f64::from(1 << 20)..=4_294_967_296.0).contains(&b) => Ok(Some(b as usize)),
                _ => Err(anyhow!("{at}: {text:?} is not a size between 1Mi and 4Gi")),
            };
            match key {
                "callDeadline" => l.call_deadline_ms = duration()?,
                "cycleBudget" => l.cycle_budget_ms = duration()?,
                "memoryPerPlugin" => l.memory_per_plugin = bytes()?,
                "memoryTotal" => l.memory_total = bytes()?,
                other => bail!(
                    "{origin}: limits: unknown field {other:?} (expected callDeadline, cycleBudget, memoryPerPlugin, memoryTotal)"
                ),
            }
        }
        Ok(l)
    }
}

/// Renders a YAML scalar the way plugin argument getters expect it.
pub fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl SchedulerConfig {
    /// The built-in config.
    pub fn default_config() -> Self {
        Self::parse(DEFAULT_CONFIG, "<built-in scheduler config>").expect("built-in config is valid")
    }

    /// Reads a config file.
    pub fn read(path: &std::path::Path) -> Result<Self> {
        let text = crate::files::read_text(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses a config file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let doc: Value = yaml_serde::from_str(text).map_err(|e| anyhow!("{origin}: not valid YAML: {e}"))?;
        let map = doc.as_mapping().ok_or_else(|| anyhow!("{origin}: expected a mapping at the top"))?;
        for k in map.keys() {
            let k = k.as_str().unwrap_or("?");
            if !["actions", "tiers", "configurations", "metrics", "limits"].contains(&k) {
                bail!("{origin}: unknown field {k:?} (expected actions, tiers, configurations, metrics, limits)");
            }
        }
        let actions_text = doc
            .get("actions")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("{origin}: field actions: missing or not a string"))?;
        let actions: Vec<String> =
            actions_text.split(',').map(|a| a.trim().to_string()).filter(|a| !a.is_empty()).collect();
        for a in &actions {
            if ActionKind::parse(a).is_none() {
                let known: Vec<&str> = ActionKind::ALL.iter().map(|a| a.name()).collect();
                bail!("{origin}: field actions: unknown action {a:?} (known: {})", known.join(", "));
            }
        }
        let mut tiers = Vec::new();
        let mut seen = Vec::new();
        let tier_list = doc.get("tiers").and_then(Value::as_sequence);
        for (ti, tier) in tier_list.into_iter().flatten().enumerate() {
            let plugins = tier
                .get("plugins")
                .and_then(Value::as_sequence)
                .ok_or_else(|| anyhow!("{origin}: tiers[{ti}].plugins: missing or not a list"))?;
            let mut confs = Vec::new();
            for (pi, p) in plugins.iter().enumerate() {
                let at = format!("{origin}: tiers[{ti}].plugins[{pi}]");
                let conf = Self::plugin(p, &at)?;
                if seen.contains(&conf.name) {
                    bail!("{at}: plugin {:?} is configured twice", conf.name);
                }
                seen.push(conf.name.clone());
                confs.push(conf);
            }
            // Volcano refuses the two in one tier (each would order and reclaim queues its own way).
            let hdrf = confs.iter().any(|c| c.name == "drf" && c.switches.get("enableHierarchy") == Some(&true));
            if hdrf && confs.iter().any(|c| c.name == "proportion") {
                bail!("{origin}: tiers[{ti}]: plugins proportion and drf with enableHierarchy cannot share a tier");
            }
            tiers.push(confs);
        }
        if seen.iter().any(|n| n == "capacity") && seen.iter().any(|n| n == "proportion") {
            bail!("{origin}: tiers: plugins capacity and proportion cannot both be configured");
        }
        let mut action_args = BTreeMap::new();
        for (ci, c) in doc.get("configurations").and_then(Value::as_sequence).into_iter().flatten().enumerate() {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| anyhow!("{origin}: configurations[{ci}].name: missing"))?;
            let mut args = BTreeMap::new();
            if let Some(m) = c.get("arguments").and_then(Value::as_mapping) {
                for (k, v) in m {
                    let key = k.as_str().unwrap_or_default().to_string();
                    let val = scalar_string(v)
                        .ok_or_else(|| anyhow!("{origin}: configurations[{ci}].arguments.{key}: expected a scalar"))?;
                    args.insert(key, val);
                }
            }
            check_action_args(name, &args).map_err(|e| anyhow!("{origin}: configurations[{ci}].arguments.{e}"))?;
            action_args.insert(name.to_string(), args);
        }
        let limits = doc.get("limits").map(|v| Limits::parse(v, origin)).transpose()?.unwrap_or_default();
        Ok(SchedulerConfig { actions, tiers, action_args, unset_is_on: true, limits })
    }

    fn plugin(p: &Value, at: &str) -> Result<PluginConf> {
        let m = p.as_mapping().ok_or_else(|| anyhow!("{at}: expected a mapping"))?;
        let mut conf = PluginConf::default();
        for (k, v) in m {
            let key = k.as_str().unwrap_or("?");
            match key {
                "name" => conf.name = v.as_str().ok_or_else(|| anyhow!("{at}.name: expected a string"))?.to_string(),
                "arguments" => {
                    for (ak, av) in v.as_mapping().ok_or_else(|| anyhow!("{at}.arguments: expected a mapping"))? {
                        let ak = ak.as_str().unwrap_or_default().to_string();
                        let av =
                            scalar_string(av).ok_or_else(|| anyhow!("{at}.arguments.{ak}: expected a scalar value"))?;
                        conf.arguments.push((ak, av));
                    }
                }
                "faultPolicy" => match v.as_str() {
                    Some("skip") => conf.fault_skip = true,
                    Some("fail-closed") => conf.fault_skip = false,
                    _ => bail!("{at}.faultPolicy: expected skip or fail-closed"),
                },
                s if SWITCHES.contains(&s) => {
                    let b = v.as_bool().ok_or_else(|| anyhow!("{at}.{s}: expected true or false"))?;
                    conf.switches.insert(s.to_string(), b);
                }
                other => bail!("{at}: unknown field {other:?}"),
            }
        }
        if conf.name.is_empty() {
            bail!("{at}.name: missing");
        }
        Ok(conf)
    }

    /// `percentageNodesToFind` of the allocate action's arguments (Volcano's
    /// `--percentage-nodes-to-find`): 0 adaptive, 100 exact search.
    pub fn nodes_percentage(&self) -> u32 {
        self.action_args
            .get("allocate")
            .and_then(|a| a.get("percentageNodesToFind"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// All configured plugin names in tier order.
    pub fn plugin_names(&self) -> impl Iterator<Item = &str> {
        self.tiers.iter().flatten().map(|p| p.name.as_str())
    }
}

/// Action arguments tephra reads: a value it would misread is an error
/// (other keys are passed over, as Volcano does).
fn check_action_args(action: &str, args: &BTreeMap<String, String>) -> std::result::Result<(), String> {
    if action == "reserve" {
        if let Some(v) =
            args.get("backfill").filter(|v| !matches!(v.as_str(), "off" | "none" | "easy" | "conservative"))
        {
            return Err(format!("backfill: expected off, easy or conservative, got {v:?}"));
        }
        return Ok(());
    }
    if action != "allocate" {
        return Ok(());
    }
    for key in ["taskClasses", "predicateErrorCacheEnable"] {
        if let Some(v) = args.get(key).filter(|v| !matches!(v.as_str(), "true" | "false")) {
            return Err(format!("{key}: expected true or false, got {v:?}"));
        }
    }
    if let Some(v) = args.get("percentageNodesToFind").filter(|v| v.parse::<u32>().map_or(true, |p| p > 100)) {
        return Err(format!("percentageNodesToFind: expected a whole number from 0 to 100, got {v:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOLCANO: &str = r#"
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
- plugins:
  - name: drf
  - name: predicates
    arguments: {predicate.CacheEnable: false}
  - name: binpack
    arguments: {binpack.weight: 10}
configurations:
- name: allocate
  arguments: {predicateErrorCacheEnable: true}
"#;

    #[test]
    fn limits_are_read_and_checked() {
        let text = "actions: allocate\nlimits:\n  callDeadline: 500ms\n  cycleBudget: 3s\n  memoryPerPlugin: 128Mi\n  memoryTotal: 1Gi\n";
        let c = SchedulerConfig::parse(text, "c.yaml").unwrap();
        let want = Limits {
            call_deadline_ms: Some(500),
            cycle_budget_ms: Some(3000),
            memory_per_plugin: Some(128 << 20),
            memory_total: Some(1 << 30),
        };
        assert_eq!(c.limits, want);
        for (bad, msg) in [
            ("callDeadline: NaN", "c.yaml: limits.callDeadline: \"NaN\" is not a positive duration"),
            ("cycleBudget: 0s", "c.yaml: limits.cycleBudget: \"0s\" is not a positive duration"),
            ("memoryPerPlugin: 8Gi", "c.yaml: limits.memoryPerPlugin: \"8Gi\" is not a size between 1Mi and 4Gi"),
            ("memoryTotal: 12", "c.yaml: limits.memoryTotal: \"12\" is not a size between 1Mi and 4Gi"),
            ("cpu: 1", "c.yaml: limits: unknown field \"cpu\""),
        ] {
            let e = SchedulerConfig::parse(&format!("actions: allocate\nlimits:\n  {bad}\n"), "c.yaml").unwrap_err();
            assert!(e.to_string().contains(msg), "{bad}: {e}");
        }
    }

    #[test]
    fn parses_volcano_config() {
        let c = SchedulerConfig::parse(VOLCANO, "t.yaml").unwrap();
        assert_eq!(c.actions, ["enqueue", "allocate", "backfill"]);
        assert_eq!(c.tiers.len(), 2);
        let gang = &c.tiers[0][1];
        assert!(!gang.switch("enablePreemptable", true));
        assert!(gang.switch("enableJobReady", true));
        assert!(!gang.switch("enableHierarchy", true));
        assert!(!gang.switch("enableJobReady", false));
        assert_eq!(c.tiers[1][2].arguments, [("binpack.weight".to_string(), "10".to_string())]);
        let mut drf = c.tiers[1][0].clone();
        drf.switches.insert("enableHierarchy".into(), true);
        assert_eq!(drf.plugin_arguments(), [("enableHierarchy".to_string(), "true".to_string())]);
        assert_eq!(c.action_args["allocate"]["predicateErrorCacheEnable"], "true");
    }

    /// Volcano refuses proportion beside hierarchical drf in one tier, not across tiers.
    #[test]
    fn proportion_and_hierarchical_drf_cannot_share_a_tier() {
        let tier = |drf: &str| {
            format!("actions: allocate\ntiers:\n- plugins:\n  - {{name: drf{drf}}}\n  - {{name: proportion}}\n")
        };
        let e = SchedulerConfig::parse(&tier(", enableHierarchy: true"), "c.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.yaml: tiers[0]: plugins proportion and drf with enableHierarchy cannot share a tier"
        );
        assert!(SchedulerConfig::parse(&tier(""), "c.yaml").is_ok());
        let apart = "actions: allocate\ntiers:\n- plugins:\n  - {name: drf, enableHierarchy: true}\n- plugins:\n  - {name: proportion}\n";
        assert!(SchedulerConfig::parse(apart, "c.yaml").is_ok());
    }

    #[test]
    fn rejects_bad_input_with_location() {
        let e = SchedulerConfig::parse("actions: \"allocate, nope\"", "c.yaml").unwrap_err();
        assert!(e.to_string().contains("c.yaml: field actions: unknown action \"nope\""), "{e}");
        let e = SchedulerConfig::parse(
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableFoo: true\n",
            "c.yaml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("tiers[0].plugins[0]: unknown field \"enableFoo\""), "{e}");
        let both = "actions: allocate\ntiers:\n- plugins:\n  - name: capacity\n  - name: proportion\n";
        assert!(SchedulerConfig::parse(both, "c.yaml").unwrap_err().to_string().contains("cannot both"));
        let args =
            |a: &str| format!("actions: allocate\ntiers: []\nconfigurations:\n- name: allocate\n  arguments: {a}\n");
        let e = SchedulerConfig::parse(&args("{taskClasses: flase}"), "c.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.yaml: configurations[0].arguments.taskClasses: expected true or false, got \"flase\""
        );
        let e = SchedulerConfig::parse(&args("{percentageNodesToFind: 120}"), "c.yaml").unwrap_err();
        assert!(e.to_string().contains("percentageNodesToFind: expected a whole number from 0 to 100"), "{e}");
        let ok = SchedulerConfig::parse(&args("{taskClasses: false, percentageNodesToFind: 100}"), "c.yaml").unwrap();
        assert_eq!(ok.action_args["allocate"]["taskClasses"], "false");
    }

    #[test]
    fn built_in_config_loads() {
        let c = SchedulerConfig::default_config();
        assert!(c.actions.contains(&"allocate".to_string()));
    }
}
