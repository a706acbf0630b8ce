//! Checks on queues before anything is scheduled: the seed's quota rules
//! (guarantee ≤ deserved ≤ capability, children within their parent) and
//! hierarchy shape. Errors reject the input; warnings are printed.

use crate::cluster::Queue;
use crate::config::SchedulerConfig;
use crate::resource::{display, ResourceList, EPSILON};
use std::collections::{BTreeMap, BTreeSet};

/// What validation found: the first error stops everything.
#[derive(Debug, Default)]
pub struct Findings {
    pub errors: Vec<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
