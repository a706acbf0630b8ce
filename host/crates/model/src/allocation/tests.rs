use super::*;
use crate::tracked::Tracked;

/// Nodes n1 and n2 with four GPUs each: gpu-0, gpu-1 on NVLink domain "a",
/// gpu-2, gpu-3 on "b"; gpu-3 of n1 is a T4, the others A100s.
fn cluster() -> Cluster {
    let mut c = Cluster::default();
    let mut nodes = Vec::new();
    for n in ["n1", "n2"] {
        nodes.push(Node { name: n.into(), ..Default::default() });
        let devices = (0..4)
            .map(|i| Device {
                name: format!("gpu-{i}"),
                attributes: BTreeMap::from([
                    ("model".into(), Attr::Str(if n == "n1" && i == 3 { "T4" } else { "A100" }.into())),
                    ("gpu.example.com/nvlink".into(), Attr::Str(if i < 2 { "a" } else { "b" }.into())),
                ]),
                capacity: BTreeMap::new(),
                tainted: false,
            })
            .collect();
        let slice = ResourceSlice {
            driver: "gpu.example.com".into(),
            pool: n.into(),
            node: Some(n.into()),
            devices,
            ..Default::default()
        };
        c.resource_slices.insert(format!("{n}-gpus"), slice);
    }
    c.nodes = Tracked::from(nodes);
    let class = DeviceClass { selectors: vec![r#"device.driver == "gpu.example.com""#.into()] };
    c.device_classes.insert("gpu".into(), class);
    c
}

fn claim(count: u32, selectors: &[&str]) -> ResourceClaim {
    let request = DeviceRequest {
        name: "gpus".into(),
        class: "gpu".into(),
        selectors: selectors.iter().map(|s| s.to_string()).collect(),
        all: false,
        count,
    };
    ResourceClaim { requests: vec![request], ..Default::default() }
}

fn pod(c: &mut Cluster, name: &str, claim: ResourceClaim) -> Pod {
    c.resource_claims.insert(format!("default/{name}-gpus"), claim);
    let pc = PodClaim { name: "gpus".into(), claim: Some(format!("{name}-gpus")), template: None };
    Pod { namespace: "default".into(), name: name.into(), device_claims: vec![pc], ..Default::default() }
}

#[test]
fn a_claim_is_allocated_on_a_node_with_free_devices() {
    let mut c = cluster();
    let p = pod(&mut c, "p", claim(3, &[]));
    let mut a = Allocator::new(&c);
    assert_eq!(a.nodes(&p).unwrap(), Some(vec!["n1".to_string(), "n2".to_string()]));
    let grants = a.pick(&p, &c.nodes[0]).unwrap();
    let alloc = grants[0].allocation.as_ref().unwrap();
    assert_eq!(alloc.node_selector[0][0].values, ["n1"]);
    assert_eq!(alloc.results.len(), 3);
    // One device is left on n1: a second pod of three goes to n2 only.
    let q = pod(&mut c.clone(), "q", claim(3, &[]));
    let mut c2 = c.clone();
    c2.resource_claims.insert("default/q-gpus".into(), claim(3, &[]));
    let mut a2 = Allocator::new(&c2);
    a2.pick(&p, &c2.nodes[0]).unwrap();
    assert_eq!(a2.nodes(&q).unwrap(), Some(vec!["n2".to_string()]));
    assert!(a2.pick(&q, &c2.nodes[0]).unwrap_err().starts_with(CANNOT_ALLOCATE));
}

#[test]
fn selectors_and_match_attribute_narrow_the_devices() {
    let mut c = cluster();
    // Two A100s sharing an NVLink domain: on n1 only domain "a" has two
    // A100s (gpu-3 is a T4); on n2 either domain does.
    let mut k = claim(2, &[r#"device.attributes["gpu.example.com"].model == "A100""#]);
    k.constraints.push(MatchAttribute { requests: vec![], attribute: "gpu.example.com/nvlink".into() });
    let p = pod(&mut c, "p", k);
    let mut a = Allocator::new(&c);
    let grants = a.pick(&p, &c.nodes[0]).unwrap();
    let devices: Vec<&str> = grants[0].allocation.as_ref().unwrap().results.iter().map(|r| r.device.as_str()).collect();
    assert_eq!(devices, ["gpu-0", "gpu-1"]);
    // Three in one domain: no node has that.
    let mut k = claim(3, &[]);
    k.constraints.push(MatchAttribute { requests: vec![], attribute: "gpu.example.com/nvlink".into() });
    let q = pod(&mut c, "q", k);
    assert_eq!(Allocator::new(&c).nodes(&q).unwrap(), Some(vec![]));
}

#[test]
fn all_mode_takes_every_matching_device_or_none() {
    let mut c = cluster();
    let mut k = claim(0, &[r#"device.attributes["gpu.example.com"].model == "T4""#]);
    k.requests[0].all = true;
    let p = pod(&mut c, "p", k);
    let mut a = Allocator::new(&c);
    assert_eq!(a.nodes(&p).unwrap(), Some(vec!["n1".to_string()]));
    let grants = a.pick(&p, &c.nodes[0]).unwrap();
    assert_eq!(grants[0].allocation.as_ref().unwrap().results.len(), 1);
}

#[test]
fn a_failing_selector_is_the_pods_reason() {
    let mut c = cluster();
    let p = pod(&mut c, "p", claim(1, &[r#"device.attributes["gpu.example.com"].cores > 2"#]));
    let e = Allocator::new(&c).nodes(&p).unwrap_err();
    assert!(e.contains("fails") && e.contains("cores"), "{e}");
    let p = pod(&mut c, "r", claim(1, &["device.driver =="]));
    assert!(Allocator::new(&c).nodes(&p).unwrap_err().contains("does not compile"));
}

#[test]
fn a_job_rolls_its_picks_back() {
    let mut c = cluster();
    let p = pod(&mut c, "p", claim(4, &[]));
    let mut a = Allocator::new(&c);
    let m = a.mark();
    a.pick(&p, &c.nodes[1]).unwrap();
    assert!(a.pick(&p, &c.nodes[1]).is_ok(), "a claim picked this cycle is held, not allocated twice");
    let q = pod(&mut c.clone(), "q", claim(1, &[]));
    let mut c2 = c.clone();
    c2.resource_claims.insert("default/q-gpus".into(), claim(1, &[]));
    let mut a = Allocator::new(&c2);
    let m2 = a.mark();
    a.pick(&p, &c2.nodes[1]).unwrap();
    assert!(a.pick(&q, &c2.nodes[1]).is_err());
    a.reset(m2);
    assert!(a.pick(&q, &c2.nodes[1]).is_ok());
    drop(m);
}

#[test]
fn nodes_and_pods_count_devices_per_class() {
    let mut c = cluster();
    let p = pod(&mut c, "p", claim(2, &[]));
    c.pods = Tracked::from(vec![p]);
    account(&mut c);
    assert_eq!(c.nodes[0].allocatable.get("deviceclass.resource.kubernetes.io/gpu"), Some(&4000.0));
    assert_eq!(c.pods[0].requests.get("deviceclass.resource.kubernetes.io/gpu"), Some(&2000.0));
    // Accounting twice changes nothing; a freed claim's devices stay asked for.
    account(&mut c);
    assert_eq!(c.pods[0].requests.get("deviceclass.resource.kubernetes.io/gpu"), Some(&2000.0));
    c.resource_slices.clear();
    account(&mut c);
    assert_eq!(c.nodes[0].allocatable.get("deviceclass.resource.kubernetes.io/gpu"), None);
}

#[test]
fn the_claim_controller_makes_frees_and_deletes() {
    let mut c = cluster();
    c.claim_templates.insert("default/t".into(), claim(1, &[]));
    let pc = PodClaim { name: "gpu".into(), claim: None, template: Some("t".into()) };
    let p = Pod { namespace: "default".into(), name: "p".into(), device_claims: vec![pc], ..Default::default() };
    c.pods = Tracked::from(vec![p]);
    assert_eq!(control(&mut c).len(), 1);
    assert_eq!(c.pods[0].device_claims[0].claim.as_deref(), Some("p-gpu"));
    let grants = Allocator::new(&c).pick(&c.pods[0].clone(), &c.nodes[0].clone()).unwrap();
    assume(&mut c, &grants[0]);
    assert_eq!(c.resource_claims["default/p-gpu"].reserved_for, ["p"]);
    c.pods[0].phase = PodPhase::Succeeded;
    control(&mut c);
    assert!(c.resource_claims["default/p-gpu"].allocation.is_none());
    c.pods.clear();
    control(&mut c);
    assert!(c.resource_claims.is_empty());
}

#[test]
fn fits_tell_taken_devices_from_devices_that_never_match() {
    let mut c = cluster();
    // n1's four GPUs taken by another claim; a T4 exists on n1 only.
    let mut held = claim(4, &[]);
    let results = (0..4)
        .map(|i| DeviceResult {
            request: "gpus".into(),
            driver: "gpu.example.com".into(),
            pool: "n1".into(),
            device: format!("gpu-{i}"),
            admin_access: false,
        })
        .collect();
    held.allocation = Some(Allocation::on_node("n1", results));
    c.resource_claims.insert("default/other".into(), held);
    let p = pod(&mut c, "p", claim(1, &[r#"device.attributes["gpu.example.com"].model == "T4""#]));
    let fits = Allocator::new(&c).fits(&p).unwrap().unwrap();
    assert_eq!(fits.now, Vec::<String>::new());
    assert_eq!(fits.if_free, ["n1"]);
}
