//! What a session holds of the reservations that outlive a cycle (seeds 000
//! and 001) and of advance reservations' windows: the data; how a session
//! restores, changes and honours them is in [`crate::reservation`] and
//! [`crate::window`].

use std::collections::BTreeMap;

/// The reservations kept between cycles, by object name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reservations {
    /// Elected big jobs (`namespace/name`), in election order, with their nodes.
    pub targets: Vec<(String, Vec<String>)>,
    /// Per queue, its locked nodes and when they were chosen.
    pub queues: BTreeMap<String, QueueLock>,
    /// Per target, when it is predicted to start (ms; `reserve` works it
    /// out every cycle from the limits of what runs on its nodes).
    pub starts: Vec<(String, i64)>,
}

/// The guarantee fingerprint of a lock adopted from the API (a new leader,
/// a restart): taken to be the queue's current guarantee, so the nodes are
/// kept until the next relock is due.
pub const ADOPTED: &str = "adopted";

impl Reservations {
    /// Adopts `nodes` as `queue`'s lock, chosen at `now_ms` (its
    /// `status.reservation`, written by the last leader).
    pub fn adopt_queue(&mut self, queue: &str, nodes: Vec<String>, now_ms: i64) {
        let lock = QueueLock { nodes, relocked_ms: now_ms, spec: ADOPTED.into(), refused: None };
        self.queues.insert(queue.to_string(), lock);
    }
}

/// A queue's reservation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QueueLock {
    /// The nodes locked for it.
    pub nodes: Vec<String>,
    /// When the nodes were last chosen (ms).
    pub relocked_ms: i64,
    /// The guarantee the nodes were chosen for; a different one relocks at once.
    pub spec: String,
    /// Why the policy refused to reserve (no nodes are then locked).
    pub refused: Option<String>,
}

/// A queue's `status.reservation`, as written after a cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueReservation {
    /// The queue.
    pub queue: String,
    /// The nodes locked for it.
    pub nodes: Vec<String>,
    /// Σ idle of the locked nodes, a row over the outcome's dims.
    pub idle: Vec<f64>,
    /// Why the policy refused to reserve.
    pub refused: Option<String>,
}

/// The session's view of the reservations, by id.
#[derive(Clone, Debug, Default)]
pub struct Locks {
    /// Per queue: (last relock ms, guarantee fingerprint, refusal); `None`: no lock.
    pub queue_state: Vec<Option<(i64, String, Option<String>)>>,
    /// Whether jobs may run ahead of a big job on its nodes (`reserve`'s
    /// argument `backfill`).
    pub backfill: Backfill,
    /// Per target, its predicted start (ms; `i64::MAX`: unknown).
    pub starts: Vec<(u32, i64)>,
    /// Advance reservations in force or to come, and per node the ones
    /// holding it (empty when there are none).
    pub windows: Vec<Window>,
    /// Per node, the windows (ids in `windows`) holding it.
    pub node_windows: Vec<Vec<u32>>,
    /// Every advance reservation's status.
    pub window_status: Vec<WindowStatus>,
}

/// Runtime-aware backfill into big jobs' reservations (Slurm's
/// `sched/backfill`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backfill {
    /// Locked nodes take only their target (Volcano's big-job reservation).
    #[default]
    Off,
    /// A job whose enforced time limit ends before a target's predicted
    /// start may run on its nodes.
    Easy,
    /// As `Easy`, and every waiting job the policy elects is reserved for,
    /// so none is pushed back by a job behind it.
    Conservative,
}

impl Backfill {
    /// Parses `reserve`'s argument (`off`, `easy`, `conservative`).
    pub fn parse(s: &str) -> Option<Backfill> {
        match s {
            "off" | "none" => Some(Backfill::Off),
            "easy" => Some(Backfill::Easy),
            "conservative" => Some(Backfill::Conservative),
            _ => None,
        }
    }
}

/// A reservation's window as the session sees it.
#[derive(Clone, Debug)]
pub struct Window {
    /// The Reservation's name.
    pub name: String,
    /// The window in force or next (ms).
    pub start_ms: i64,
    /// Its end (ms).
    pub end_ms: i64,
    /// Nothing starts on its nodes while it is open.
    pub maintenance: bool,
    /// Queues (ids) and namespaces it serves.
    pub queues: Vec<u32>,
    /// See [`Window::queues`].
    pub namespaces: Vec<String>,
}

/// A reservation's status after a cycle.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowStatus {
    /// The Reservation's name.
    pub name: String,
    /// `Pending`, `Active` or `Ended`.
    pub state: &'static str,
    /// The nodes it holds.
    pub nodes: Vec<String>,
    /// The window in force or next (ms; none once ended).
    pub window: Option<(i64, i64)>,
}
