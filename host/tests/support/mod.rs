//! What the real-Kubernetes tests share: a real etcd + kube-apiserver on
//! loopback (tests/k8s/env.sh; with `whole`, kube-controller-manager and kwok
//! too), `tephra run` as a child process, and helpers that read the API
//! server's records. Each test file uses some of it.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A real etcd + kube-apiserver, stopped on drop.
pub struct Cluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    /// The same, impersonating the tephra ServiceAccount.
    pub sa_kubeconfig: PathBuf,
    pub kubectl: PathBuf,
    /// kube-controller-manager and kwok run beside the API server: pods run
    /// and finish by themselves (the tests play no kubelet then).
    pub whole: bool,
}

pub fn env_sh() -> PathBuf {
    repo().join("tests/k8s/env.sh")
}

/// The directory env.sh installs kube-apiserver, kubectl, kube-scheduler,
/// helm and the registry into.
pub fn bindir() -> PathBuf {
    let out = Command::new(env_sh()).arg("bindir").output().unwrap();
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

impl Cluster {
    pub fn start(name: &str) -> Cluster {
        Cluster::start_env(name, &[])
    }

    /// With these settings for env.sh (`TEPHRA_K8S_AUDIT=1`, …).
    pub fn start_env(name: &str, env: &[(&str, &str)]) -> Cluster {
        let dir = std::env::temp_dir().join(format!("tephra-kube-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // The watchdog env.sh starts stops everything and removes `dir`
        // when this process ends, even by a SIGKILL that runs no Drop.
        let out = Command::new(env_sh())
            .arg("start")
            .arg(&dir)
            .env("TEPHRA_K8S_OWNER", std::process::id().to_string())
            .envs(env.iter().copied())
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "env.sh start failed (run tests/k8s/env.sh install first)");
        let kubeconfig = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        let kubectl = bindir().join("kubectl");
        let text = std::fs::read_to_string(&kubeconfig).unwrap();
        let sa = text
            .replace("  user:\n    token:", "  user:\n    as: system:serviceaccount:tephra-system:tephra\n    token:");
        assert_ne!(sa, text, "kubeconfig layout changed");
        let sa_kubeconfig = dir.join("kubeconfig-sa");
        std::fs::write(&sa_kubeconfig, sa).unwrap();
        let whole = env.iter().any(|(k, v)| *k == "TEPHRA_K8S_CONTROLLERS" && *v == "1");
        let c = Cluster { dir, kubeconfig, sa_kubeconfig, kubectl, whole };
        for f in ["00-namespace.yaml", "10-crds.yaml", "20-rbac.yaml"] {
            c.kubectl(&["apply", "-f", repo().join("deploy").join(f).to_str().unwrap()]);
        }
        c.kubectl(&[
            "wait",
            "--for=condition=Established",
            "crd/queues.scheduling.volcano.sh",
            "crd/podgroups.scheduling.volcano.sh",
        ]);
        c
    }

    pub fn try_kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String, String> {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| e.to_string())?;
        if let Some(s) = stdin {
            child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!("kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)))
        }
    }

    pub fn kubectl(&self, args: &[&str]) -> String {
        self.try_kubectl(args, None).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn apply(&self, yaml: &str) {
        self.try_kubectl(&["apply", "-f", "-"], Some(yaml)).unwrap_or_else(|e| panic!("{e}"));
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.kubectl(&a)).unwrap()
    }

    /// A Ready node with this much cpu (and 32Gi memory, 110 pods).
    pub fn node(&self, name: &str, cpu: &str) {
        self.apply(&format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n"
        ));
        let status = format!(
            r#"{{"status":{{"capacity":{{"cpu":"{cpu}","memory":"32Gi","pods":"110"}},"allocatable":{{"cpu":"{cpu}","memory":"32Gi","pods":"110"}},"conditions":[{{"type":"Ready","status":"True","reason":"KubeletReady","message":"test"}}]}}}}"#
        );
        self.kubectl(&["patch", "node", name, "--subresource=status", "--type=merge", "-p", &status]);
    }

    /// Pod name → node name ("" when unbound).
    pub fn placements(&self, ns: &str) -> BTreeMap<String, String> {
        let v = self.json(&["get", "pods", "-n", ns]);
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["metadata"]["name"].as_str().unwrap().to_string(),
                    p["spec"]["nodeName"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// The kubelet's part: bound pods start; terminating pods go. Returns the
    /// conditions of the pods it deleted.
    pub fn kubelet(&self, ns: &str) -> Vec<(String, Value)> {
        let mut gone = Vec::new();
        if self.whole {
            return gone; // kwok is the kubelet
        }
        let v = self.json(&["get", "pods", "-n", ns]);
        for p in v["items"].as_array().unwrap() {
            let name = p["metadata"]["name"].as_str().unwrap();
            if p["metadata"]["deletionTimestamp"].is_string() {
                gone.push((name.to_string(), p["status"]["conditions"].clone()));
                let _ = self.try_kubectl(&["delete", "pod", "-n", ns, name, "--grace-period=0", "--force"], None);
            } else if p["spec"]["nodeName"].is_string() && p["status"]["phase"] == "Pending" {
                let _ = self.try_kubectl(
                    &[
                        "patch",
                        "pod",
                        "-n",
                        ns,
                        name,
                        "--subresource=status",
                        "--type=merge",
                        "-p",
                        &format!(r#"{{"status":{{"phase":"Running","startTime":"{}"}}}}"#, now_rfc3339()),
                    ],
                    None,
                );
            }
        }
        gone
    }

    /// Events in `ns` with this reason, as (object name, message).
    pub fn events(&self, ns: &str, reason: &str) -> Vec<(String, String)> {
        let v = self.json(&["get", "events", "-n", ns, "--field-selector", &format!("reason={reason}")]);
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["involvedObject"]["name"].as_str().unwrap_or("").to_string(),
                    e["message"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// The whole cluster (tests/k8s/env.sh with TEPHRA_K8S_CONTROLLERS=1):
    /// etcd, kube-apiserver, kube-controller-manager and kwok, with `nodes`
    /// kwok nodes (`kwok-node-0000`…, 32 cpu, 256Gi, 8 GPUs, labelled into
    /// racks of 4, spines of 16 and zones of 64), Ready.
    pub fn whole(name: &str, nodes: usize) -> Cluster {
        Cluster::whole_with(name, nodes, &[])
    }

    /// The same with nodes of another shape (`TEPHRA_K8S_NODE_CPU`, `_MEMORY`,
    /// `_GPU`, `_PODS` of env.sh).
    pub fn whole_with(name: &str, nodes: usize, shape: &[(&str, &str)]) -> Cluster {
        Cluster::whole_env(name, nodes, &[], shape)
    }

    /// The same, the servers started with more of env.sh's settings
    /// (`TEPHRA_K8S_AUDIT`, say).
    pub fn whole_env(name: &str, nodes: usize, env: &[(&str, &str)], shape: &[(&str, &str)]) -> Cluster {
        let env = [env, &[("TEPHRA_K8S_CONTROLLERS", "1")]].concat();
        let c = Cluster::start_env(name, &env);
        let st = Command::new(env_sh())
            .arg("nodes")
            .arg(&c.dir)
            .arg(nodes.to_string())
            .envs(shape.iter().copied())
            .status()
            .unwrap();
        assert!(st.success(), "env.sh nodes failed");
        c
    }

    pub fn restart_apiserver(&self) {
        let st = Command::new(env_sh()).arg("restart-apiserver").arg(&self.dir).status().unwrap();
        assert!(st.success(), "restart-apiserver failed");
    }
}

impl Drop for Cluster {
    /// Stops every process using the cluster's directory (etcd,
    /// kube-apiserver, and any tephra, registry or kube-scheduler started
    /// with files there) and removes it, passed or failed; with
    /// `TEPHRA_K8S_KEEP=1` the directory (its logs) stays.
    fn drop(&mut self) {
        let _ = Command::new(env_sh()).arg("stop").arg(&self.dir).status();
        if std::env::var("TEPHRA_K8S_KEEP").is_ok_and(|v| v == "1") {
            eprintln!("kept {} (logs)", self.dir.display());
        } else {
            if std::thread::panicking() {
                eprintln!("removing {} (TEPHRA_K8S_KEEP=1 keeps it, with its logs)", self.dir.display());
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A running `tephra run`, SIGKILLed on drop if still running.
pub struct Tephra {
    pub child: Child,
    pub log: PathBuf,
}

impl Tephra {
    pub fn start(c: &Cluster, tag: &str, extra: &[&str]) -> Tephra {
        Tephra::start_as(c, &c.sa_kubeconfig, tag, extra)
    }

    /// `tephra run` with this kubeconfig.
    pub fn start_as(c: &Cluster, kubeconfig: &Path, tag: &str, extra: &[&str]) -> Tephra {
        Tephra::start_env(c, kubeconfig, tag, extra, &[])
    }

    /// `tephra run` with this kubeconfig and these environment variables.
    pub fn start_env(c: &Cluster, kubeconfig: &Path, tag: &str, extra: &[&str], env: &[(&str, &Path)]) -> Tephra {
        let log = c.dir.join(format!("tephra-{tag}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_tephra"))
            .envs(env.iter().map(|(k, v)| (*k, *v)))
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(if extra.contains(&"--period") { &[][..] } else { &["--period", "300ms"][..] })
            .args(["--identity", tag])
            .args(extra)
            .env("RUST_LOG", "tephra=info,warn")
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        Tephra { child, log }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn signal(&self, sig: &str) {
        Command::new("kill").arg(format!("-{sig}")).arg(self.child.id().to_string()).status().unwrap();
    }

    /// SIGTERM, then waits for the exit; returns whether it exited cleanly.
    pub fn terminate(&mut self) -> bool {
        self.signal("TERM");
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.success();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// GET `path` from its --admin server (address read from its log).
    pub fn admin_get(&self, path: &str) -> String {
        self.admin_request("GET", path, None)
    }

    /// One request to its --admin server, with `token` as bearer token;
    /// the whole answer.
    pub fn admin_request(&self, method: &str, path: &str, token: Option<&str>) -> String {
        use std::io::Read;
        let addr = self.admin_address();
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        write!(s, "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        body
    }

    /// Its --admin address, read from its log once it is there: a replica
    /// still compiling its plugins has not printed it yet.
    pub fn admin_address(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let log = self.log();
            if let Some(a) = log.lines().find_map(|l| l.strip_prefix("admin: listening on http://")) {
                return a.trim().to_string();
            }
            assert!(Instant::now() < deadline, "no admin address in the log after 60 s:\n{log}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The value of one metric line.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.admin_get("/metrics")
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")).and_then(|v| v.trim().parse().ok()))
    }

    pub fn assert_alive(&mut self) {
        if let Some(st) = self.child.try_wait().unwrap() {
            panic!("tephra exited ({st}):\n{}", self.log());
        }
    }
}

impl Drop for Tephra {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- tephra log {} ---\n{}", self.log.display(), self.log());
        }
    }
}

/// Polls `f` until it returns Some, running the kubelet of `ns` between tries.
pub fn wait<T>(c: &Cluster, ns: &str, secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {secs} s waiting for {what}");
        c.kubelet(ns);
        std::thread::sleep(Duration::from_millis(300));
    }
}

pub fn pod(ns: &str, name: &str, cpu: &str, group: Option<&str>, extra_annotations: &str) -> String {
    let group = group.map(|g| format!("scheduling.k8s.io/group-name: {g}\n    ")).unwrap_or_default();
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  annotations:
    {group}{extra_annotations}tephra.io/test: \"1\"
spec:
  schedulerName: volcano
  containers:
  - name: main
    image: busybox
    resources:
      requests: {{cpu: \"{cpu}\", memory: 1Gi}}
---
"
    )
}

/// The pod's `PodScheduled=False` condition, if it has one.
pub fn scheduled_false(c: &Cluster, ns: &str, pod: &str) -> Option<Value> {
    let p = c.json(&["get", "pod", "-n", ns, pod]);
    let conds = p["status"]["conditions"].as_array().cloned().unwrap_or_default();
    conds.into_iter().find(|x| x["type"] == "PodScheduled" && x["status"] == "False")
}

/// Waits (30 s at most) for the pod's `PodScheduled=False` condition.
pub fn unschedulable(c: &Cluster, ns: &str, pod: &str) -> Value {
    wait(c, ns, 30, &format!("{pod} PodScheduled=False"), || scheduled_false(c, ns, pod))
}

pub fn now_rfc3339() -> String {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    tephra::manifest::format_time(ms)
}

pub fn namespace(c: &Cluster, ns: &str) {
    c.apply(&format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n"));
    // With the controllers, the ServiceAccount admission plugin refuses pods
    // until the namespace's default ServiceAccount exists.
    if c.whole {
        wait(c, ns, 60, "the default ServiceAccount", || c.try_kubectl(&["get", "sa", "default", "-n", ns], None).ok());
    }
}

/// Sum of cpu requests (millicores) per node in `ns`.
pub fn cpu_per_node(c: &Cluster, ns: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for p in c.json(&["get", "pods", "-n", ns])["items"].as_array().unwrap() {
        let Some(node) = p["spec"]["nodeName"].as_str() else { continue };
        let cpu = p["spec"]["containers"][0]["resources"]["requests"]["cpu"].as_str().unwrap_or("0");
        let m = cpu.strip_suffix('m').map_or_else(|| cpu.parse::<u64>().unwrap() * 1000, |m| m.parse().unwrap());
        *out.entry(node.to_string()).or_default() += m;
    }
    out
}

/// A kube-scheduler of the API server's release (tests/k8s/env.sh builds
/// it), killed on drop.
pub struct KubeScheduler(Child);

impl KubeScheduler {
    pub fn start(c: &Cluster) -> KubeScheduler {
        let bin = bindir().join("kube-scheduler");
        let conf = c.dir.join("kube-scheduler.yaml");
        std::fs::write(
            &conf,
            format!(
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
                 clientConnection: {{kubeconfig: \"{}\"}}\nleaderElection: {{leaderElect: false}}\n",
                c.kubeconfig.display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(c.dir.join("kube-scheduler.log")).unwrap();
        let child = Command::new(bin)
            .arg("--config")
            .arg(&conf)
            .args(["--secure-port", "0"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("kube-scheduler (run tests/k8s/env.sh install)");
        KubeScheduler(child)
    }
}

impl Drop for KubeScheduler {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
