//! HyperNodes, network topologies, subgroups and Volcano Job partitions as
//! manifests give them.

use tephra_readers::manifest::{parse, Object};

fn one(text: &str) -> anyhow::Result<Object> {
    Ok(parse(text, "f.yaml")?.remove(0).object)
}

#[test]
fn hypernodes_are_read_and_bad_ones_named() {
    let hn = |spec: &str| {
        one(&format!(
            "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {{name: r}}\nspec: {spec}\n"
        ))
    };
    let Object::HyperNode(h) =
        hn("{tier: 1, tierName: rack, members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: r}}}}]}")
            .unwrap()
    else {
        panic!()
    };
    assert_eq!((h.tier, h.tier_name.as_str(), h.members.len()), (1, "rack", 1));
    for (spec, want) in [
        ("{tier: 1, members: []}", "f.yaml: HyperNode r: spec.members: a HyperNode needs at least one member"),
        ("{members: [{type: Node, selector: {exactMatch: {name: n}}}]}", "f.yaml: HyperNode r: spec.tier: missing"),
        (
            "{tier: 1, members: [{type: Node, selector: {exactMatch: {name: n}, regexMatch: {pattern: n}}}]}",
            "f.yaml: HyperNode r: spec.members[0].selector: needs exactly one of exactMatch, regexMatch and labelMatch",
        ),
        (
            "{tier: 1001, members: [{type: Node, selector: {exactMatch: {name: n}}}]}",
            "f.yaml: HyperNode r: spec.tier: 1001 is not a tier (0 to 1000)",
        ),
        (
            "{tier: 1, members: [{type: Rack, selector: {exactMatch: {name: n}}}]}",
            "f.yaml: HyperNode r: spec.members[0].type: \"Rack\" is not Node or HyperNode",
        ),
    ] {
        assert_eq!(hn(spec).unwrap_err().to_string(), want);
    }
}

#[test]
fn network_topology_and_subgroups_on_podgroups() {
    let pg = |spec: &str| {
        one(&format!("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {{name: g, namespace: ns}}\nspec: {spec}\n"))
    };
    let Object::PodGroup(g) = pg("{minMember: 2, networkTopology: {mode: soft, highestTierName: rack}, \
         subGroupPolicy: [{name: w, subGroupSize: 2, minSubGroups: 1, matchLabelKeys: [part]}]}")
    .unwrap() else {
        panic!()
    };
    let nt = g.network_topology.unwrap();
    assert!(nt.soft && nt.highest_tier_name.as_deref() == Some("rack"));
    assert_eq!((g.subgroups[0].size, g.subgroups[0].min_subgroups), (2, 1));
    let e = pg("{networkTopology: {mode: hard, highestTierAllowed: 1, highestTierName: rack}}").unwrap_err();
    assert_eq!(
        e.to_string(),
        "f.yaml: PodGroup ns/g: spec.networkTopology: must not specify 'highestTierAllowed' and 'highestTierName' simultaneously"
    );
    let e = pg("{networkTopology: {mode: strict}}").unwrap_err();
    assert_eq!(e.to_string(), "f.yaml: PodGroup ns/g: spec.networkTopology.mode: \"strict\" is not hard or soft");
}

/// A Volcano Job's partitions become a subgroup policy and partition
/// labels on its pods, as its job controller makes them.
#[test]
fn job_partitions() {
    let job = |policy: &str| {
        one(&format!(
            "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: j, namespace: ns}}\n\
             spec:\n  tasks:\n  - name: w\n    replicas: 4\n    partitionPolicy: {policy}\n    \
             template: {{spec: {{containers: [{{resources: {{requests: {{cpu: 1}}}}}}]}}}}\n"
        ))
    };
    let Object::PodGroup(g) =
        job("{totalPartitions: 2, partitionSize: 2, minPartitions: 1, networkTopology: {highestTierAllowed: 1}}")
            .unwrap()
    else {
        panic!()
    };
    assert_eq!(g.min_member, 2, "minPartitions × partitionSize");
    assert_eq!(g.subgroups[0].match_label_keys, ["volcano.sh/partition-id"]);
    let parts: Vec<&str> = g.job_templates.iter().map(|p| p.labels["volcano.sh/partition-id"].as_str()).collect();
    assert_eq!(parts, ["0", "0", "1", "1"]);
    let e = job("{totalPartitions: 3, partitionSize: 2}").unwrap_err();
    assert_eq!(
        e.to_string(),
        "f.yaml: Job ns/j task w: partitionPolicy: replicas (4) must equal totalPartitions × partitionSize (3 × 2)"
    );
}
