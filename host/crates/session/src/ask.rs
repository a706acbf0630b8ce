//! The door through which the actions ask the plugins: every question
//! delivers first the events the plugins have not seen, so an action never
//! passes the session's event log beside its policies.

use tephra_contract::{Event, LockOwner};
use tephra_dispatch::backend::Call;
use tephra_dispatch::policy::{Policies, Reject};

/// The session's policies, asked with its events (`Session::ask`).
pub struct Ask<'s> {
    policies: &'s mut Policies,
    events: &'s [Event],
}

impl<'s> Ask<'s> {
    pub(crate) fn new(policies: &'s mut Policies, events: &'s [Event]) -> Self {
        Ask { policies, events }
    }

    /// Sort keys of every plugin for `ids` (one row per plugin, tier order).
    pub fn order_keys(&mut self, call: Call<'_>, n: usize) -> Vec<Vec<f64>> {
        self.policies.order_keys(self.events, call, n)
    }

    /// Predicates over `nodes`, ANDed: for each node the first rejection.
    pub fn predicate(&mut self, task: u32, nodes: &[u32]) -> Vec<Option<Reject>> {
        self.policies.predicate(self.events, task, nodes)
    }

    /// Node scores summed over all plugins.
    pub fn node_scores(&mut self, task: u32, nodes: &[u32]) -> Vec<f64> {
        self.policies.node_scores(self.events, task, nodes)
    }

    /// HyperNode scores for a job's (or subgroup's) domain, summed over all
    /// plugins.
    pub fn hypernode_scores(&mut self, job: u32, group: u32, hypernodes: &[u32]) -> Vec<f64> {
        self.policies.hypernode_scores(self.events, job, group, hypernodes)
    }

    /// OR over all plugins (no plugin ⇒ false): overused. Closed ⇒ overused.
    pub fn any_true(&mut self, call: Call<'_>) -> bool {
        self.policies.any_true(self.events, call)
    }

    /// AND over all plugins (no plugin ⇒ true): allocatable, preemptive,
    /// job-ready. Closed ⇒ false.
    pub fn all_true(&mut self, call: Call<'_>) -> bool {
        self.policies.all_true(self.events, call)
    }

    /// Tier voting (pipelined, enqueueable): a Reject decides at once, a Permit
    /// decides at the end of its tier, no decision ⇒ true. Closed ⇒ Reject.
    pub fn vote(&mut self, call: Call<'_>) -> bool {
        self.policies.vote(self.events, call)
    }

    /// The tier vote, naming the plugin that rejected (None: admitted).
    pub fn rejected_by(&mut self, call: Call<'_>) -> Option<String> {
        self.policies.rejected_by(self.events, call)
    }

    /// The plugin that rejected `call` under the tier vote, with the reason
    /// it gave (`None` when it gave none, or was closed).
    pub fn refusal(&mut self, call: Call<'_>) -> Option<(String, Option<String>)> {
        self.policies.refusal(self.events, call)
    }

    /// The first plugin that finds the job invalid, with its reason. Closed
    /// ⇒ invalid.
    pub fn job_valid(&mut self, job: u32) -> Option<(String, String)> {
        self.policies.job_valid(self.events, job)
    }

    /// Notifies every plugin that a job was admitted.
    pub fn job_enqueued(&mut self, job: u32) {
        self.policies.job_enqueued(self.events, job)
    }

    /// The first tier with any plugin decides (AND within it); none ⇒ false.
    /// Closed ⇒ not starving (nothing is evicted for the job).
    pub fn job_starving(&mut self, job: u32) -> bool {
        self.policies.job_starving(self.events, job)
    }

    /// Victim selection with Volcano's tier quirks (reference §5.1): an
    /// empty answer makes its tier abstain, an empty intersection resets, the
    /// first tier with victims decides. Returns the victims and the plugins
    /// whose votes selected them. Closed ⇒ no victims.
    pub fn victims(&mut self, call: Call<'_>, candidates: &[u32]) -> Option<(Vec<u32>, Vec<String>)> {
        self.policies.victims(self.events, call, candidates)
    }

    /// Per tier the union of victim-task answers; the first non-empty tier
    /// decides. Closed ⇒ none.
    pub fn victim_tasks(&mut self, candidates: &[u32]) -> Vec<u32> {
        self.policies.victim_tasks(self.events, candidates)
    }

    /// The first plugin (tier order) that names a job among `jobs`. Closed
    /// ⇒ none.
    pub fn target_job(&mut self, jobs: &[u32]) -> Option<u32> {
        self.policies.target_job(self.events, jobs)
    }

    /// The first plugin's reserved nodes for `owner`, all among `candidates`
    /// (`None`: no plugin answers; `Some(Err)`: a refusal with its reason,
    /// prefixed with the plugin's name; closed ⇒ a refusal).
    pub fn reserved_nodes(&mut self, owner: LockOwner, candidates: &[u32]) -> Option<Result<Vec<u32>, String>> {
        self.policies.reserved_nodes(self.events, owner, candidates)
    }
}
