//! HyperNodes, and the network-topology fields of PodGroups and Volcano Jobs,
//! read as Volcano's CRDs and admission checks have them.

use super::fields::{count, get, int, map, seq, string, At};
use anyhow::Result;
use tephra_model::topology::{HyperNode, Member, NetworkTopology, NodeSelector, SubGroupPolicy};
use yaml_serde::Value;

/// The label a Volcano Job's partitioned pods carry: their partition.
pub const PARTITION_ID: &str = "volcano.sh/partition-id";
/// The label naming a Volcano Job pod's task.
pub const TASK_SPEC: &str = "volcano.sh/task-spec";

/// The highest tier a HyperNode may have (networks have a handful).
const MAX_TIER: u32 = 1000;

/// A `topology.volcano.sh/v1alpha1` HyperNode.
pub(super) fn hypernode(at: &At, v: &Value, name: String) -> Result<HyperNode> {
    let tier = int(at, v, "spec.tier")?.ok_or_else(|| at.err("spec.tier", "missing"))?;
    let tier = u32::try_from(tier)
        .ok()
        .filter(|&t| t <= MAX_TIER)
        .ok_or_else(|| at.err("spec.tier", format!("{tier} is not a tier (0 to {MAX_TIER})")))?;
    let members = seq(at, v, "spec.members")?;
    if members.is_empty() {
        return Err(at.err("spec.members", "a HyperNode needs at least one member"));
    }
    let mut out = Vec::new();
    for (i, m) in members.iter().enumerate() {
        let path = format!("spec.members[{i}]");
        let kind = string(at, m, "type")?.unwrap_or_default();
        let sel = get(m, "selector").ok_or_else(|| at.err(&format!("{path}.selector"), "missing"))?;
        let exact = string(at, sel, "exactMatch.name")?;
        let regex = string(at, sel, "regexMatch.pattern")?;
        let labels = get(sel, "labelMatch");
        let given = [exact.is_some(), regex.is_some(), labels.is_some()].iter().filter(|b| **b).count();
        if given != 1 {
            let why = "needs exactly one of exactMatch, regexMatch and labelMatch";
            return Err(at.err(&format!("{path}.selector"), why));
        }
        let selector = if let Some(name) = exact {
            if name.is_empty() {
                return Err(at.err(&format!("{path}.selector.exactMatch.name"), "empty"));
            }
            NodeSelector::Exact(name)
        } else if let Some(p) = regex {
            let re = regex::Regex::new(&p).map_err(|e| {
                // The parser's message spans lines; its last says what is wrong.
                let text = e.to_string();
                let why = text.lines().last().unwrap_or_default().trim_start_matches("error: ").to_string();
                at.err(
                    &format!("{path}.selector.regexMatch.pattern"),
                    format!("{p:?} is not a regular expression: {why}"),
                )
            })?;
            NodeSelector::Regex(re)
        } else {
            // An empty labelMatch picks no node (Volcano's member resolution).
            NodeSelector::Labels(
                super::rules::selector(at, sel, "labelMatch", &format!("{path}.selector"))?.unwrap_or_default(),
            )
        };
        match (kind.as_str(), selector) {
            ("Node", s) => out.push(Member::Nodes(s)),
            ("HyperNode", NodeSelector::Exact(n)) => out.push(Member::HyperNode(n)),
            // Volcano's admission lets these through and its tree ignores them.
            ("HyperNode", _) => {}
            (other, _) => return Err(at.err(&format!("{path}.type"), format!("{other:?} is not Node or HyperNode"))),
        }
    }
    let tier_name = string(at, v, "spec.tierName")?.unwrap_or_default();
    Ok(HyperNode { name, tier, tier_name, members: out })
}

/// A `networkTopology` at `path` of `v`.
pub(super) fn network_topology(at: &At, v: &Value, path: &str) -> Result<Option<NetworkTopology>> {
    let Some(nt) = get(v, path) else { return Ok(None) };
    if nt.is_null() {
        return Ok(None);
    }
    let soft = match string(at, nt, "mode")?.as_deref() {
        None | Some("hard") => false,
        Some("soft") => true,
        Some(m) => return Err(at.err(&format!("{path}.mode"), format!("{m:?} is not hard or soft"))),
    };
    let highest_tier = int(at, nt, "highestTierAllowed")?
        .map(|t| u32::try_from(t).map_err(|_| at.err(&format!("{path}.highestTierAllowed"), "must be 0 or more")))
        .transpose()?;
    let highest_tier_name = string(at, nt, "highestTierName")?.filter(|n| !n.is_empty());
    if highest_tier.is_some() && highest_tier_name.is_some() {
        // Volcano's admission refuses both at once.
        let why = "must not specify 'highestTierAllowed' and 'highestTierName' simultaneously";
        return Err(at.err(path, why));
    }
    Ok(Some(NetworkTopology { soft, highest_tier, highest_tier_name }))
}

/// A PodGroup's `spec.subGroupPolicy`.
pub(super) fn subgroups(at: &At, v: &Value) -> Result<Vec<SubGroupPolicy>> {
    let mut out = Vec::new();
    for (i, p) in seq(at, v, "spec.subGroupPolicy")?.iter().enumerate() {
        let path = format!("spec.subGroupPolicy[{i}]");
        let name = string(at, p, "name")?.ok_or_else(|| at.err(&format!("{path}.name"), "missing"))?;
        let size = count(at, p, "subGroupSize")?.unwrap_or(1);
        if size == 0 {
            return Err(at.err(&format!("{path}.subGroupSize"), "must be at least 1"));
        }
        out.push(SubGroupPolicy {
            name,
            size,
            min_subgroups: count(at, p, "minSubGroups")?.unwrap_or(0),
            selector: map(at, p, "labelSelector.matchLabels")?,
            match_label_keys: seq(at, p, "matchLabelKeys")?.iter().filter_map(crate::config::scalar_string).collect(),
            topology: network_topology(at, p, "networkTopology")?,
        });
    }
    Ok(out)
}

/// A Volcano Job task's `partitionPolicy`, as its job controller turns it
/// into a subgroup policy (pods labelled with their partition) after its
/// admission checks; with the task's minAvailable it implies.
pub(super) fn partition(
    at: &At,
    task: &Value,
    name: &str,
    replicas: u32,
) -> Result<Option<(SubGroupPolicy, Option<u32>)>> {
    if get(task, "partitionPolicy").is_none() {
        return Ok(None);
    }
    let total = count(at, task, "partitionPolicy.totalPartitions")?.unwrap_or(0);
    let size = count(at, task, "partitionPolicy.partitionSize")?.unwrap_or(0);
    if total == 0 || size == 0 {
        return Err(at.err("partitionPolicy", "totalPartitions and partitionSize must be at least 1"));
    }
    if total.checked_mul(size) != Some(replicas) {
        let why = format!("replicas ({replicas}) must equal totalPartitions × partitionSize ({total} × {size})");
        return Err(at.err("partitionPolicy", why));
    }
    let min = count(at, task, "partitionPolicy.minPartitions")?.unwrap_or(0);
    if let (Some(m), true) = (count(at, task, "minAvailable")?, min > 0) {
        if Some(m) != min.checked_mul(size) {
            let why = format!("minAvailable ({m}) must equal minPartitions × partitionSize ({min} × {size})");
            return Err(at.err("partitionPolicy", why));
        }
    }
    let policy = SubGroupPolicy {
        name: name.into(),
        size,
        min_subgroups: min,
        selector: [(TASK_SPEC.to_string(), name.to_string())].into(),
        match_label_keys: vec![PARTITION_ID.into()],
        topology: network_topology(at, task, "partitionPolicy.networkTopology")?,
    };
    Ok(Some((policy, (min > 0).then(|| min.saturating_mul(size)))))
}
