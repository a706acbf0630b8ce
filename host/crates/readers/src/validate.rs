//! Checks on queues before anything is scheduled: the seed's quota rules
//! (guarantee ≤ deserved ≤ capability, children within their parent) and
//! hierarchy shape. Errors reject the input; warnings are printed.

use crate::config::SchedulerConfig;
use std::collections::{BTreeMap, BTreeSet};
use tephra_model::cluster::Queue;
use tephra_model::resource::{display, ResourceList, EPSILON};

/// What validation found: the first error stops everything.
#[derive(Debug, Default)]
pub struct Findings {
    /// What makes the input unusable.
    pub errors: Vec<String>,
    /// What is allowed but likely a mistake.
    pub warnings: Vec<String>,
}

impl Findings {
    /// The errors with the queue each names: (queue, the problem).
    pub fn by_queue(&self) -> impl Iterator<Item = (&str, &str)> {
        self.errors.iter().filter_map(|e| e.strip_prefix("Queue ")?.split_once(": "))
    }
}

fn exceeds(a: &ResourceList, b: &ResourceList) -> Option<String> {
    a.iter().find_map(|(k, v)| {
        let limit = b.get(k)?;
        (*v > limit + EPSILON).then(|| format!("{k} {} > {}", display(k, *v), display(k, *limit)))
    })
}

/// Validates queues against each other and the configured quota plugin.
pub fn queues(queues: &[Queue], config: &SchedulerConfig) -> Findings {
    let mut f = rules(queues);
    let plugins: Vec<&str> = config.plugin_names().collect();
    for q in queues {
        if plugins.contains(&"proportion") && !q.deserved.is_empty() {
            f.warnings.push(format!(
                "Queue {}: spec.deserved is ignored by the proportion plugin (it derives deserved from spec.weight); use the capacity plugin to set it",
                q.name
            ));
        }
    }
    f
}

/// The quota and hierarchy rules alone, whatever the plugins (errors only).
pub fn rules(queues: &[Queue]) -> Findings {
    let mut f = Findings::default();
    let names: BTreeSet<&str> = queues.iter().map(|q| q.name.as_str()).collect();
    for q in queues {
        let at = format!("Queue {}", q.name);
        if let Some(x) = exceeds(&q.guarantee, &q.deserved) {
            f.errors.push(format!(
                "{at}: spec.guarantee exceeds spec.deserved ({x}); the rule is guarantee ≤ deserved ≤ capability"
            ));
        }
        if let Some(x) = exceeds(&q.deserved, &q.capability) {
            f.errors.push(format!(
                "{at}: spec.deserved exceeds spec.capability ({x}); the rule is guarantee ≤ deserved ≤ capability"
            ));
        }
        if let Some(x) = exceeds(&q.guarantee, &q.capability) {
            f.errors.push(format!("{at}: spec.guarantee exceeds spec.capability ({x})"));
        }
        if let Some(p) = &q.parent {
            if !names.contains(p.as_str()) {
                f.errors.push(format!("{at}: spec.parent: queue {p:?} does not exist"));
            }
        }
    }
    let parent: BTreeMap<&str, &str> =
        queues.iter().filter_map(|q| Some((q.name.as_str(), q.parent.as_deref()?))).collect();
    for q in queues {
        let mut seen = vec![q.name.as_str()];
        let mut cur = q.name.as_str();
        while let Some(&p) = parent.get(cur) {
            if seen.contains(&p) {
                seen.push(p);
                f.errors.push(format!("Queue {}: spec.parent forms a cycle: {}", q.name, seen.join(" → ")));
                break;
            }
            seen.push(p);
            cur = p;
        }
    }
    hdrf_paths(queues, &mut f);
    let hierarchy = queues.iter().any(|q| q.parent.is_some());
    if hierarchy {
        for p in queues {
            let children: Vec<&Queue> =
                queues.iter().filter(|c| c.parent.as_deref() == Some(p.name.as_str())).collect();
            for c in &children {
                if let Some(x) = exceeds(&c.capability, &p.capability) {
                    f.errors.push(format!("Queue {}: spec.capability exceeds its parent {}'s ({x})", c.name, p.name));
                }
            }
            let mut sum = ResourceList::new();
            for c in &children {
                for (k, v) in &c.deserved {
                    *sum.entry(k.clone()).or_default() += v;
                }
            }
            if !p.deserved.is_empty() {
                if let Some(x) = exceeds(&sum, &p.deserved) {
                    f.errors.push(format!(
                        "Queue {}: its children's spec.deserved add up to more than its own ({x})",
                        p.name
                    ));
                }
            }
        }
    }
    f
}

/// Hierarchical DRF's queue paths (`volcano.sh/hierarchy`, with a weight
/// each in `volcano.sh/hierarchy-weights`), as Volcano's admission checks
/// them: as many weights as path elements, each a number above 0, and no
/// queue on a path another queue sits below.
fn hdrf_paths(queues: &[Queue], f: &mut Findings) {
    const PATH: &str = "volcano.sh/hierarchy";
    const WEIGHTS: &str = "volcano.sh/hierarchy-weights";
    let mut paths = Vec::new();
    for q in queues {
        let (path, weights) = (q.annotations.get(PATH), q.annotations.get(WEIGHTS));
        if path.is_none() && weights.is_none() {
            continue;
        }
        let at = format!("Queue {}: metadata.annotations", q.name);
        let (path, weights) = (path.map_or("", String::as_str), weights.map_or("", String::as_str));
        let (p, w): (Vec<&str>, Vec<&str>) = (path.split('/').collect(), weights.split('/').collect());
        if p.len() != w.len() {
            f.errors.push(format!(
                "{at}.{WEIGHTS}: {} weights ({weights:?}) for the {} elements of {PATH} {path:?}",
                w.len(),
                p.len()
            ));
        } else if let Some(bad) = w.iter().find(|x| !x.trim().parse::<f64>().is_ok_and(|x| x > 0.0)) {
            f.errors.push(format!("{at}.{WEIGHTS}: {bad:?} in {weights:?} is not a number above 0"));
        }
        // Under "root" as Volcano's admission puts it.
        let path = if !path.is_empty() && !weights.is_empty() && !path.starts_with("root") {
            format!("root/{path}")
        } else {
            path.to_string()
        };
        paths.push((q.name.as_str(), path));
    }
    for (name, path) in &paths {
        if let Some((other, below)) =
            paths.iter().find(|(_, b)| b.len() > path.len() && b.starts_with(&format!("{path}/")))
        {
            f.errors.push(format!(
                "Queue {name}: metadata.annotations.{PATH}: {path:?} has queue {other} below it ({below:?}); queues sit at the leaves"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hdrf_paths_are_checked_as_volcano_admits_them() {
        let q = |name: &str, path: &str, weights: &str| Queue {
            name: name.into(),
            annotations: [("volcano.sh/hierarchy", path), ("volcano.sh/hierarchy-weights", weights)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        let ok = [q("a", "root/eng/prod", "1/2/8"), q("b", "root/eng/dev", "1/2/2"), q("c", "root/node", "1/1")];
        assert!(rules(&ok).errors.is_empty(), "{:?}", rules(&ok).errors);
        for (bad, want) in [
            (q("x", "root/a/b", "1/2/3/4"), "Queue x: metadata.annotations.volcano.sh/hierarchy-weights: 4 weights"),
            (q("x", "root/a/b", "1/-1/3"), "\"-1\" in \"1/-1/3\" is not a number above 0"),
            (q("x", "root/a/b", "1/a/3"), "\"a\" in \"1/a/3\" is not a number above 0"),
        ] {
            let e = rules(&[bad]).errors;
            assert!(e.len() == 1 && e[0].contains(want), "{e:?}");
        }
        let e = rules(&[q("top", "root/sci", "1/8"), q("leaf", "root/sci/dev", "1/8/2")]).errors;
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("Queue top: metadata.annotations.volcano.sh/hierarchy: \"root/sci\" has queue leaf"),
            "{e:?}"
        );
    }

    fn q(name: &str, parent: Option<&str>, cap: &[(&str, f64)], des: &[(&str, f64)], gua: &[(&str, f64)]) -> Queue {
        let l = |v: &[(&str, f64)]| v.iter().map(|(k, x)| (k.to_string(), *x)).collect();
        Queue {
            name: name.into(),
            parent: parent.map(String::from),
            capability: l(cap),
            deserved: l(des),
            guarantee: l(gua),
            weight: 1.0,
            ..Default::default()
        }
    }

    fn config(plugin: &str) -> SchedulerConfig {
        SchedulerConfig::parse(&format!("actions: allocate\ntiers:\n- plugins:\n  - name: {plugin}\n"), "c").unwrap()
    }

    #[test]
    fn seed_rules() {
        let ok = q("a", None, &[("cpu", 4000.0)], &[("cpu", 2000.0)], &[("cpu", 1000.0)]);
        assert!(queues(&[ok], &config("capacity")).errors.is_empty());
        let bad = q("b", None, &[("cpu", 4000.0)], &[("cpu", 5000.0)], &[]);
        let f = queues(&[bad], &config("capacity"));
        assert_eq!(f.errors, ["Queue b: spec.deserved exceeds spec.capability (cpu 5 > 4); the rule is guarantee ≤ deserved ≤ capability"]);
        let bad = q("c", None, &[], &[("cpu", 1000.0)], &[("cpu", 2000.0)]);
        assert!(queues(&[bad], &config("capacity")).errors[0].contains("spec.guarantee exceeds spec.deserved"));
    }

    #[test]
    fn hierarchy_rules() {
        let root = q("root", None, &[("cpu", 8000.0)], &[("cpu", 8000.0)], &[]);
        let a = q("a", Some("root"), &[("cpu", 9000.0)], &[("cpu", 5000.0)], &[]);
        let b = q("b", Some("root"), &[], &[("cpu", 4000.0)], &[]);
        let f = queues(&[root, a, b], &config("capacity"));
        assert!(
            f.errors.iter().any(|e| e.contains("Queue a: spec.capability exceeds its parent root's (cpu 9 > 8)")),
            "{f:?}"
        );
        assert!(
            f.errors.iter().any(|e| e.contains("Queue root: its children's spec.deserved add up to more")),
            "{f:?}"
        );
        assert!(f.by_queue().any(|(q, why)| q == "a" && why.starts_with("spec.capability exceeds")), "{f:?}");
        let x = q("x", Some("y"), &[], &[], &[]);
        let y = q("y", Some("x"), &[], &[], &[]);
        let orphan = q("o", Some("nowhere"), &[], &[], &[]);
        let f = queues(&[x, y, orphan], &config("capacity"));
        assert!(f.errors.iter().any(|e| e.contains("forms a cycle: x → y → x")), "{f:?}");
        assert!(f.errors.iter().any(|e| e.contains("Queue o: spec.parent: queue \"nowhere\" does not exist")), "{f:?}");
    }

    #[test]
    fn deserved_under_proportion_warns() {
        let a = q("a", None, &[], &[("cpu", 1000.0)], &[]);
        let f = queues(std::slice::from_ref(&a), &config("proportion"));
        assert!(f.errors.is_empty());
        assert!(f.warnings[0].contains("spec.deserved is ignored by the proportion plugin"));
        assert!(queues(&[a], &config("capacity")).warnings.is_empty());
    }
}
