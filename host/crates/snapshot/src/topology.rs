//! The snapshot's topology columns: the HyperNode tree, each job's
//! network-topology limit, and its subgroups (partitions).

use crate::extra::Extra;
use crate::names::{Interner, NONE};
use std::collections::BTreeMap;
use std::sync::Arc;
use tephra_contract::{RoleMin, Snapshot, Subgroup};
use tephra_model::cluster::Cluster;
use tephra_model::topology::Tree;

/// Fills the topology columns of `snap` (jobs and tasks already built).
pub(super) fn columns(strings: &mut Interner, cluster: &Cluster, snap: &mut Snapshot, extra: &mut Extra) {
    let hypernodes: Vec<_> = cluster.hypernodes.values().cloned().collect();
    let nodes: Vec<_> = cluster.nodes.iter().collect();
    let built = match &cluster.topology_error {
        Some(e) => Err(e.clone()),
        None => Tree::build(&hypernodes, &nodes),
    };
    let tree = match built {
        Ok(t) => t,
        Err(e) => {
            extra.topology_error = Some(e);
            Tree::flat(nodes.len())
        }
    };
    snap.hypernode_name = tree.names.iter().map(|n| strings.id(n)).collect();
    snap.hypernode_tier = tree.tiers.clone();
    snap.hypernode_parent = tree.parents.clone();
    snap.node_hypernode = tree.node_leaf.clone();
    snap.task_subgroup = vec![NONE; snap.task_job.len()];
    extra.job_subgroups = vec![Vec::new(); extra.job_pg.len()];
    for (j, &gi) in extra.job_pg.iter().enumerate() {
        let g = &cluster.podgroups[gi];
        let job_tier = g.network_topology.as_ref().and_then(|s| tree.highest_tier(s, None));
        snap.job_highest_tier.push(job_tier.unwrap_or(NONE));
        snap.job_topology.push(g.network_topology.is_some());
        if g.subgroups.is_empty() {
            continue;
        }
        // Per (match index, id, policy), its tasks: Volcano orders subgroups
        // by match index (the first value as a number), then by their id
        // (`<policy>-<values>`), across policies.
        let mut found: BTreeMap<(i64, String, usize), Vec<u32>> = BTreeMap::new();
        for &t in &extra.job_tasks[j] {
            let pod = &cluster.pods[extra.task_pod[t as usize]];
            let hit = g.subgroups.iter().enumerate().find_map(|(i, p)| p.key_of(&pod.labels).map(|v| (i, v)));
            if let Some((i, values)) = hit {
                let index = values[0].parse().unwrap_or(0);
                let id = format!("{}-{}", g.subgroups[i].name, values.join("-"));
                found.entry((index, id, i)).or_default().push(t);
            }
        }
        for ((_, _, i), tasks) in found {
            let p = &g.subgroups[i];
            let sg = snap.subgroups.len() as u32;
            let highest_tier = p.topology.as_ref().and_then(|s| tree.highest_tier(s, job_tier)).unwrap_or(NONE);
            snap.subgroups.push(Subgroup {
                job: j as u32,
                policy: strings.id(&p.name),
                min_available: p.size,
                highest_tier,
                topology: p.topology.is_some(),
            });
            for &t in &tasks {
                snap.task_subgroup[t as usize] = sg;
            }
            extra.subgroup_tasks.push(tasks);
            extra.job_subgroups[j].push(sg);
        }
        for p in g.subgroups.iter().filter(|p| p.min_subgroups > 0) {
            let role = strings.id(&p.name);
            snap.job_min_subgroups.push(RoleMin { job: j as u32, role, count: p.min_subgroups });
        }
    }
    extra.topology = Arc::new(tree);
}
