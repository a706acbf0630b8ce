//! Advance reservations, Slurm's `scontrol create reservation`: a window of
//! time in which some nodes serve only the queues or namespaces named, or
//! nothing at all (maintenance). Before a window opens, a job may start on
//! its nodes only if its enforced time limit ends first; the window may
//! repeat daily or weekly, or float a fixed time ahead of now.

use crate::node::Node;
use std::collections::BTreeMap;

/// The API group and version of the `Reservation` kind.
pub const API_VERSION: &str = "tephra.io/v1alpha1";

/// How a window repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeat {
    /// Every day at the same time.
    Daily,
    /// Every week at the same time.
    Weekly,
}

impl Repeat {
    /// How far apart its windows open.
    pub fn period_ms(self) -> i64 {
        match self {
            Repeat::Daily => 86_400_000,
            Repeat::Weekly => 7 * 86_400_000,
        }
    }
}

/// A `Reservation` object (tephra.io/v1alpha1).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdvanceReservation {
    /// `metadata.name`.
    pub name: String,
    /// The first window's start (ms since the epoch); when floating, how far
    /// ahead of now the window stays.
    pub start_ms: i64,
    /// How long each window lasts (ms).
    pub duration_ms: i64,
    /// Whether the window comes back daily or weekly.
    pub repeat: Option<Repeat>,
    /// The window never comes: it stays `start_ms` ahead of now, so only
    /// jobs that end within that time start on its nodes.
    pub floating: bool,
    /// Nodes with these labels (all nodes when empty) …
    pub node_selector: BTreeMap<String, String>,
    /// … at most this many, by name.
    pub node_count: Option<usize>,
    /// Who may use the nodes in the window: these queues …
    pub queues: Vec<String>,
    /// … and these namespaces.
    pub namespaces: Vec<String>,
    /// Nothing starts on the nodes in the window.
    pub maintenance: bool,
}

/// Where a reservation stands at a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Its (next) window has not opened.
    Pending,
    /// A window is open.
    Active,
    /// Its only window has closed.
    Ended,
}

impl State {
    /// The state as its status writes it.
    pub fn name(self) -> &'static str {
        match self {
            State::Pending => "Pending",
            State::Active => "Active",
            State::Ended => "Ended",
        }
    }
}

impl AdvanceReservation {
    /// The window in force or next to come at `now_ms`, `[start, end)` in
    /// ms; `None` once the last has closed.
    pub fn window(&self, now_ms: i64) -> Option<(i64, i64)> {
        if self.floating {
            let start = now_ms.saturating_add(self.start_ms);
            return Some((start, start.saturating_add(self.duration_ms)));
        }
        let mut start = self.start_ms;
        if let (Some(r), true) = (self.repeat, now_ms >= self.start_ms) {
            let period = r.period_ms();
            start += (now_ms - self.start_ms) / period * period;
            if now_ms >= start + self.duration_ms {
                start += period;
            }
        }
        let end = start.saturating_add(self.duration_ms);
        (now_ms < end).then_some((start, end))
    }

    /// Its state at `now_ms`.
    pub fn state(&self, now_ms: i64) -> State {
        match self.window(now_ms) {
            None => State::Ended,
            Some((start, _)) if now_ms >= start => State::Active,
            Some(_) => State::Pending,
        }
    }

    /// The nodes it holds: those with its labels, the first `node_count` by name.
    pub fn nodes<'a>(&self, nodes: impl Iterator<Item = &'a Node>) -> Vec<String> {
        let mut out: Vec<String> = nodes
            .filter(|n| self.node_selector.iter().all(|(k, v)| n.labels.get(k) == Some(v)))
            .map(|n| n.name.clone())
            .collect();
        out.sort();
        if let Some(c) = self.node_count {
            out.truncate(c);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;

    #[test]
    fn windows_open_close_and_repeat() {
        let once = AdvanceReservation { start_ms: 10 * H, duration_ms: 2 * H, ..Default::default() };
        assert_eq!(once.window(0), Some((10 * H, 12 * H)));
        assert_eq!(once.state(0), State::Pending);
        assert_eq!(once.state(11 * H), State::Active);
        assert_eq!(once.window(12 * H), None);
        assert_eq!(once.state(12 * H), State::Ended);
        let daily = AdvanceReservation { repeat: Some(Repeat::Daily), ..once.clone() };
        assert_eq!(daily.window(12 * H), Some((34 * H, 36 * H)));
        assert_eq!(daily.window(35 * H), Some((34 * H, 36 * H)));
        assert_eq!(daily.state(35 * H), State::Active);
        let floating = AdvanceReservation { floating: true, start_ms: H, ..once };
        assert_eq!(floating.window(5 * H), Some((6 * H, 8 * H)));
        assert_eq!(floating.state(100 * H), State::Pending);
    }

    #[test]
    fn nodes_by_label_then_count() {
        let node = |name: &str, rack: &str| Node {
            name: name.into(),
            labels: [("rack".to_string(), rack.to_string())].into(),
            ..Default::default()
        };
        let nodes = [node("c", "a"), node("b", "b"), node("a", "a")];
        let r = AdvanceReservation {
            node_selector: [("rack".to_string(), "a".to_string())].into(),
            node_count: Some(1),
            ..Default::default()
        };
        assert_eq!(r.nodes(nodes.iter()), ["a"]);
        assert_eq!(AdvanceReservation::default().nodes(nodes.iter()), ["a", "b", "c"]);
    }
}
