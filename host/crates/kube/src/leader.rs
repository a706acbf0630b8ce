//! Leader election on a `coordination.k8s.io/v1` Lease, the way client-go's
//! leaderelection does it: the holder renews `renewTime` every `retry`; a
//! candidate takes the Lease over when it has seen no renewal for
//! `duration` (measured on its own clock, so clock skew does not matter);
//! every write carries the resourceVersion read, so two candidates cannot
//! both win. A leader that cannot renew for `renew_deadline` (shorter than
//! `duration`) stops scheduling before anyone else may start.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::Client;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lease timing (client-go's defaults).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// How long a Lease holds without renewal (`leaseDuration`).
    pub duration: Duration,
    /// How long the leader keeps trying to renew before it steps down.
    pub renew_deadline: Duration,
    /// How often a candidate tries (`retryPeriod`).
    pub retry: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry: Duration::from_secs(2),
        }
    }
}

/// Shared view of the election.
#[derive(Clone)]
pub struct Leadership {
    leading: Arc<AtomicBool>,
    /// When the Lease was last written by us.
    renewed: Arc<Mutex<Option<Instant>>>,
    deadline: Duration,
}

impl Leadership {
    /// Always the leader (no election).
    pub fn always() -> Self {
        Leadership {
            leading: Arc::new(AtomicBool::new(true)),
            renewed: Arc::new(Mutex::new(None)),
            deadline: Duration::MAX,
        }
    }

    /// Whether this replica may schedule now: it holds the Lease and renewed it recently.
    pub fn is_leader(&self) -> bool {
        if !self.leading.load(Ordering::SeqCst) {
            return false;
        }
        match *self.renewed.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(t) => t.elapsed() < self.deadline,
            None => self.deadline == Duration::MAX,
        }
    }
}

/// Waits `retry` between two rounds; `false` once `stop` turned true.
async fn pause(retry: Duration, stop: &mut tokio::sync::watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(retry) => {}
        _ = stop.changed() => return false,
    }
    !*stop.borrow()
}

/// A candidate for one Lease.
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    timing: Timing,
    state: Leadership,
    /// (holder, renewTime, resourceVersion) last seen, and when it was first seen.
    observed: Option<((String, String, String), Instant)>,
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

impl Elector {
    /// A candidate for the Lease `namespace/name`, as `identity`.
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str, timing: Timing) -> Self {
        Elector {
            api: Api::namespaced(client, namespace),
            name: name.into(),
            identity: identity.into(),
            timing,
            state: Leadership {
                leading: Arc::new(AtomicBool::new(false)),
                renewed: Arc::new(Mutex::new(None)),
                deadline: timing.renew_deadline,
            },
            observed: None,
        }
    }

    /// A handle that says whether this replica leads.
    pub fn leadership(&self) -> Leadership {
        self.state.clone()
    }

    fn set(&self, leading: bool) {
        let was = self.state.leading.swap(leading, Ordering::SeqCst);
        if leading {
            *self.state.renewed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
        if was != leading {
            tracing::warn!(
                "leader election: {} {} lease {}",
                self.identity,
                if leading { "acquired" } else { "lost" },
                self.name
            );
        }
    }

    /// One round: create, renew or take over the Lease if allowed.
    pub async fn try_once(&mut self) {
        let lease = match self.api.get_opt(&self.name).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("leader election: reading lease {}: {e}", self.name);
                return self.check_deadline();
            }
        };
        let Some(mut lease) = lease else {
            let fresh = Lease {
                metadata: ObjectMeta { name: Some(self.name.clone()), ..Default::default() },
                spec: Some(self.spec(None, 0)),
            };
            match self.api.create(&PostParams::default(), &fresh).await {
                Ok(_) => self.set(true),
                Err(e) => tracing::info!("leader election: creating lease {}: {e}", self.name),
            }
            return;
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let mine = holder == self.identity;
        if !mine && !holder.is_empty() {
            let seen = (
                holder.clone(),
                spec.renew_time.as_ref().map(|t| t.0.to_string()).unwrap_or_default(),
                lease.metadata.resource_version.clone().unwrap_or_default(),
            );
            match &self.observed {
                Some((s, _)) if *s == seen => {}
                _ => self.observed = Some((seen, Instant::now())),
            }
            let duration =
                spec.lease_duration_seconds.map_or(self.timing.duration, |s| Duration::from_secs(s.max(1) as u64));
            let since = self.observed.as_ref().map_or(Duration::ZERO, |(_, t)| t.elapsed());
            if since < duration {
                self.set(false);
                return;
            }
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!mine);
        let acquired = if mine { spec.acquire_time.clone() } else { None };
        lease.spec = Some(self.spec(acquired, transitions));
        match self.api.replace(&self.name, &PostParams::default(), &lease).await {
            Ok(_) => self.set(true),
            Err(e) => {
                tracing::info!("leader election: writing lease {}: {e}", self.name);
                if mine {
                    self.check_deadline();
                } else {
                    self.set(false);
                }
            }
        }
    }

    fn spec(&self, acquired: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.timing.duration.as_secs() as i32),
            acquire_time: Some(acquired.unwrap_or_else(now)),
            renew_time: Some(now()),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    /// Steps down when the Lease could not be renewed in time.
    fn check_deadline(&self) {
        if self.state.leading.load(Ordering::SeqCst) && !self.state.is_leader() {
            self.set(false);
        }
    }

    /// Gives the Lease up (on shutdown), so a standby takes over at once.
    pub async fn release(&mut self) {
        if !self.state.leading.swap(false, Ordering::SeqCst) {
            return;
        }
        let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await else { return };
        let Some(spec) = lease.spec.as_mut() else { return };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now());
        match self.api.replace(&self.name, &PostParams::default(), &lease).await {
            Ok(_) => tracing::warn!("leader election: {} released lease {}", self.identity, self.name),
            Err(e) => tracing::warn!("leader election: releasing lease {}: {e}", self.name),
        }
    }

    /// Campaigns until `stop` turns true, then releases the Lease.
    pub async fn run(mut self, mut stop: tokio::sync::watch::Receiver<bool>) {
        loop {
            self.try_once().await;
            if !pause(self.timing.retry, &mut stop).await {
                break;
            }
        }
        self.release().await;
    }
}

/// A replica running without leader election announces itself on a Lease of
/// its own (`<name>-unelected`) and watches it and the election's Lease:
/// another active replica, elected or not, would schedule the same pods and
/// double-book nodes, so it is reported loudly every time it is seen.
pub struct Presence {
    api: Api<Lease>,
    name: String,
    elected: String,
    identity: String,
    timing: Timing,
}

impl Presence {
    /// This replica announcing itself on the Lease `namespace/name`, as `identity`.
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str, timing: Timing) -> Self {
        Presence {
            api: Api::namespaced(client, namespace),
            name: format!("{name}-unelected"),
            elected: name.into(),
            identity: identity.into(),
            timing,
        }
    }

    /// The other holder of `lease`, if it renewed within a lease duration.
    async fn other(&self, lease: &str) -> Option<String> {
        let spec = self.api.get_opt(lease).await.ok()??.spec?;
        let holder = spec.holder_identity.filter(|h| !h.is_empty() && *h != self.identity)?;
        let renewed = spec.renew_time?.0;
        let age = Timestamp::now().duration_since(renewed);
        let fresh = age.as_secs_f64() < self.timing.duration.as_secs_f64().max(1.0);
        fresh.then_some(holder)
    }

    /// One round: report others, then announce this replica.
    pub async fn try_once(&mut self) {
        for (lease, how) in [(&self.name, "without leader election"), (&self.elected, "as the elected leader")] {
            if let Some(other) = self.other(lease).await {
                tracing::error!(
                    "another tephra replica ({other}) is active {how} beside this one ({}), which runs without \
                     --leader-elect: both schedule the same pods and can double-book nodes; run every replica \
                     with --leader-elect",
                    self.identity
                );
            }
        }
        let spec = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.timing.duration.as_secs() as i32),
            renew_time: Some(now()),
            ..Default::default()
        };
        let lease =
            Lease { metadata: ObjectMeta { name: Some(self.name.clone()), ..Default::default() }, spec: Some(spec) };
        // Last writer wins: two replicas alternate, and each sees the other.
        let r = match self.api.get_opt(&self.name).await {
            Ok(Some(old)) => {
                let mut l = lease;
                l.metadata.resource_version = old.metadata.resource_version;
                self.api.replace(&self.name, &PostParams::default(), &l).await.map(drop)
            }
            Ok(None) => self.api.create(&PostParams::default(), &lease).await.map(drop),
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            tracing::debug!("announcing on lease {}: {e}", self.name);
        }
    }

    /// Announces and watches until `stop` turns true.
    pub async fn run(mut self, mut stop: tokio::sync::watch::Receiver<bool>) {
        loop {
            self.try_once().await;
            if !pause(self.timing.retry, &mut stop).await {
                break;
            }
        }
    }
}
