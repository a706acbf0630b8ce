//! Equivalence classes: allocate reuses predicate and score answers across
//! tasks of one class. Whenever the search covers every node (≤ 100 nodes,
//! Volcano's minimum), that must choose exactly what a fresh search per task
//! (`taskClasses: false`) chooses: same binds, same nodes, same reasons for
//! what stays pending.

use tephra::actions;
use tephra::config::SchedulerConfig;
use tephra::model::Cluster;
use tephra::reservation::Reservations;
use tephra::scheduler::Library;
use tephra::session::{Decision, Session};
use tephra::synthetic::{generate, Spec, CONFIG};

fn config(classes: bool) -> SchedulerConfig {
    let text = format!("{CONFIG}configurations:\n- name: allocate\n  arguments:\n    taskClasses: {classes}\n");
    SchedulerConfig::parse(&text, "test config").unwrap()
}

/// One cycle of `config`'s actions: the binds as (pod, node) and the pending
/// pods' reasons.
fn run(
    lib: &Library,
    cluster: &Cluster,
    config: &SchedulerConfig,
    locks: &Reservations,
) -> (Vec<(String, String)>, Vec<String>) {
    let (policies, _) = lib.policies(config, None);
    let mut ssn = Session::open_with(cluster, policies, &Default::default(), 0, 7, locks);
    ssn.actions = config.actions.clone();
    ssn.action_args = config.action_args.clone();
    for a in &config.actions {
        (actions::by_name(a).unwrap())(&mut ssn);
    }
    assert!(ssn.policies.faults.is_empty(), "{:?}", ssn.policies.faults);
    let mut reasons: Vec<String> =
        ssn.fit_errors.iter().map(|(t, e)| format!("{}: {}", ssn.names.tasks[*t as usize], e.summary())).collect();
    reasons.sort();
    let (out, _) = ssn.close();
    let binds = out
        .decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Bind { task, node } => {
                Some((out.names.tasks[*task as usize].clone(), out.names.nodes[*node as usize].clone()))
            }
            _ => None,
        })
        .collect();
    (binds, reasons)
}

fn schedule(lib: &Library, cluster: &Cluster, classes: bool) -> (Vec<(String, String)>, Vec<String>) {
    run(lib, cluster, &config(classes), &Reservations::default())
}

fn cluster(seed: u64, pending: usize, running: usize) -> Cluster {
    let mut c =
        generate(&Spec { nodes: 60, pending_pods: pending, running_pods: running, queues: 4, node_groups: 4, seed });
    // A node-group limit: the answer for a node changes with placements on
    // other nodes of the group, which only the re-check of the chosen node sees.
    c.queues[0]
        .annotations
        .insert("volcano.sh/nodegroup-resource-limits".into(), r#"{"group-0": {"cpu": "40"}}"#.into());
    c
}

#[test]
fn classes_choose_what_a_fresh_search_chooses() {
    let lib = Library::load(None).unwrap();
    for (seed, pending, running) in [(1, 300, 0), (2, 1500, 0), (3, 800, 400), (4, 2500, 200)] {
        let c = cluster(seed, pending, running);
        let (fresh, fresh_reasons) = schedule(&lib, &c, false);
        let (reused, reused_reasons) = schedule(&lib, &c, true);
        assert!(!fresh.is_empty());
        assert_eq!(fresh.len(), reused.len(), "seed {seed}: bind counts differ");
        assert_eq!(fresh, reused, "seed {seed}: binds differ");
        assert_eq!(fresh_reasons, reused_reasons, "seed {seed}: pending reasons differ");
    }
}

#[test]
fn classes_respect_a_node_group_limit() {
    let lib = Library::load(None).unwrap();
    let c = cluster(2, 1500, 0);
    let (binds, _) = schedule(&lib, &c, true);
    let cpu_on_group0: f64 = binds
        .iter()
        .filter_map(|(pod, node)| {
            let p = c.pods.iter().find(|p| p.key() == *pod)?;
            let n = c.nodes.iter().find(|n| n.name == *node)?;
            let queue = &c.podgroups.iter().find(|g| Some(&g.name) == p.group.as_ref())?.queue;
            (queue == "queue-0" && n.labels["volcano.sh/nodegroup-name"] == "group-0").then(|| p.requests["cpu"])
        })
        .sum();
    assert!(cpu_on_group0 > 0.0, "queue-0 placed nothing in group-0");
    assert!(cpu_on_group0 <= 40_000.0, "queue-0 used {cpu_on_group0}m cpu in group-0, limit 40 cpu");
}

#[test]
fn a_class_passed_to_another_job_drops_nodes_reserved_for_the_first() {
    let lib = Library::load(None).unwrap();
    // n1, n2: 16 cpu, the emptiest, so least-requested prefers them; n3, n4: 8 cpu.
    let mut c = tephra::synthetic::small(4, 8000.0, 0, 1000.0, 2);
    for n in &mut c.nodes[..2] {
        n.allocatable.insert("cpu".into(), 16_000.0);
    }
    let mut template = c.podgroups[0].clone();
    for (job, created) in [("a", 1), ("b", 2)] {
        template.name = job.into();
        template.created = created;
        c.podgroups.push(template.clone());
        for i in 0..2 {
            c.pods.push(tephra::model::Pod {
                namespace: "ns".into(),
                name: format!("{job}-{i}"),
                group: Some(job.into()),
                requests: [("cpu".into(), 1000.0)].into(),
                created,
                ..Default::default()
            });
        }
    }
    c.podgroups.remove(0);
    // n1 and n2 are reserved for job a (a big-job lock).
    let locks = Reservations { targets: vec![("ns/a".into(), vec!["n1".into(), "n2".into()])], ..Default::default() };
    for classes in [true, false] {
        let config = SchedulerConfig::parse(
            &format!(
                "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n  - name: nodeorder\n\
                 configurations:\n- name: allocate\n  arguments: {{taskClasses: {classes}}}\n"
            ),
            "test config",
        )
        .unwrap();
        let (mut binds, _) = run(&lib, &c, &config, &locks);
        binds.sort();
        assert_eq!(binds.len(), 4, "taskClasses {classes}: {binds:?}");
        for (pod, node) in &binds {
            let reserved = node == "n1" || node == "n2";
            assert_eq!(pod.starts_with("ns/a-"), reserved, "taskClasses {classes}: {pod} on {node}: {binds:?}");
        }
    }
}

/// The same with pod rules (`synthetic::add_pod_rules`): anti-affinity
/// classes drop nodes as members land, spread classes park the nodes their
/// skew turns down and take them back once they fit. Classes still choose
/// what a fresh search chooses, and every rule holds in what they chose.
#[test]
fn classes_with_pod_rules_choose_what_a_fresh_search_chooses() {
    let lib = Library::load(None).unwrap();
    for (seed, pending, running) in [(5, 600, 0), (6, 1500, 300)] {
        let mut c = cluster(seed, pending, running);
        tephra::synthetic::add_pod_rules(&mut c, 40);
        let (fresh, fresh_reasons) = schedule(&lib, &c, false);
        let (reused, reused_reasons) = schedule(&lib, &c, true);
        assert!(!fresh.is_empty());
        if let Some(i) = (0..fresh.len().max(reused.len())).find(|&i| fresh.get(i) != reused.get(i)) {
            panic!("seed {seed}: binds differ first at {i}: fresh {:?}, classes {:?}", fresh.get(i), reused.get(i));
        }
        assert_eq!(fresh_reasons, reused_reasons, "seed {seed}: pending reasons differ");
        // The rules, checked here: per job, anti-affinity members on distinct
        // nodes, spread members within one of each other per zone.
        let zone = |node: &str| c.nodes.iter().find(|n| n.name == node).unwrap().labels["zone"].clone();
        let mut by_job: std::collections::BTreeMap<String, Vec<&String>> = Default::default();
        for (pod, node) in &reused {
            let p = c.pods.iter().find(|p| p.key() == *pod).unwrap();
            if p.labels.contains_key("app") {
                by_job.entry(p.labels["app"].clone()).or_default().push(node);
            }
        }
        let (mut anti, mut spread) = (0, 0);
        for (job, nodes) in by_job {
            let p = c.pods.iter().find(|p| p.labels.get("app") == Some(&job)).unwrap();
            if !p.pod_terms.is_empty() {
                anti += 1;
                let distinct: std::collections::BTreeSet<_> = nodes.iter().collect();
                assert_eq!(distinct.len(), nodes.len(), "seed {seed}: {job} shares a node: {nodes:?}");
            } else {
                spread += 1;
                let mut per: std::collections::BTreeMap<String, usize> =
                    ["zone-0", "zone-1", "zone-2"].iter().map(|z| (z.to_string(), 0)).collect();
                nodes.iter().for_each(|n| *per.get_mut(&zone(n)).unwrap() += 1);
                let (max, min) = (per.values().max().unwrap(), per.values().min().unwrap());
                assert!(max - min <= 1, "seed {seed}: {job} skewed: {per:?}");
            }
        }
        assert!(anti > 0 && spread > 0, "seed {seed}: both kinds of rule placed ({anti}, {spread})");
    }
}
