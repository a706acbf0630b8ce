//! [`export_plugin!`](crate::export_plugin): a [`Policy`](crate::Policy) type
//! as a component exporting `session` and the points it lists, each answered
//! by the SDK's [`Runtime`](crate::Runtime).

/// Exports a [`Policy`](crate::Policy) type as the component's `session`
/// interface and one interface per extension point listed (snake case: the
/// points of [`Policy::POINTS`](crate::Policy::POINTS), `events` aside). The
/// list must name exactly those points: the build fails otherwise.
///
/// ```text
/// #[derive(Default)]
/// struct Priority;
/// impl tephra_sdk::Policy for Priority { /* POINTS: TaskOrder, JobOrder */ }
/// tephra_sdk::export_plugin!(Priority: task_order, job_order);
/// ```
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty $(: $($point:ident),* $(,)?)?) => {
        struct __TephraExport;

        thread_local! {
            static __TEPHRA_RUNTIME: ::core::cell::RefCell<$crate::Runtime<$plugin>> =
                ::core::cell::RefCell::new($crate::Runtime::default());
        }

        fn __tephra<R>(f: impl FnOnce(&mut $crate::Runtime<$plugin>) -> R) -> R {
            __TEPHRA_RUNTIME.with(|rt| f(&mut rt.borrow_mut()))
        }

        const _: () = assert!(
            $crate::export::same_points(
                <$plugin as $crate::Policy>::POINTS,
                &[$($($crate::__tephra_point_name!($point)),*)?]
            ),
            "export_plugin!: the points listed differ from Policy::POINTS (events aside)"
        );

        impl $crate::bindings::exports::tephra::scheduler::session::Guest for __TephraExport {
            fn info() -> $crate::bindings::exports::tephra::scheduler::session::PluginInfo {
                $crate::Runtime::<$plugin>::info()
            }
            fn open_session(
                snapshot: $crate::types::Snapshot,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::core::result::Result<(), ::std::string::String> {
                __tephra(|rt| rt.open_session(snapshot, arguments))
            }
            fn update_session(
                delta: $crate::types::SnapshotDelta,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::core::result::Result<bool, ::std::string::String> {
                __tephra(|rt| rt.update_session(&delta, arguments))
            }
            fn close_session() {
                __tephra(|rt| rt.close_session())
            }
            fn on_events(events: ::std::vec::Vec<$crate::types::Event>) {
                __tephra(|rt| rt.on_events(&events))
            }
            fn on_event(event: $crate::types::Event) {
                __tephra(|rt| rt.on_events(&[event]))
            }
        }
        $crate::bindings::__export_session!(__TephraExport with_types_in $crate::bindings);

        $($($crate::__tephra_point!($point);)*)?
    };
}

/// One point's export: its `Guest` answered by the runtime.
#[doc(hidden)]
#[macro_export]
macro_rules! __tephra_point {
    (queue_order) => {
        impl $crate::points::queue_order::exports::tephra::scheduler::queue_order::Guest for __TephraExport {
            fn queue_order(queues: ::std::vec::Vec<u32>) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.queue_order(&queues))
            }
        }
        $crate::points::queue_order::__export_queue_order!(__TephraExport with_types_in $crate::points::queue_order);
    };
    (job_order) => {
        impl $crate::points::job_order::exports::tephra::scheduler::job_order::Guest for __TephraExport {
            fn job_order(jobs: ::std::vec::Vec<u32>) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.job_order(&jobs))
            }
        }
        $crate::points::job_order::__export_job_order!(__TephraExport with_types_in $crate::points::job_order);
    };
    (task_order) => {
        impl $crate::points::task_order::exports::tephra::scheduler::task_order::Guest for __TephraExport {
            fn task_order(tasks: ::std::vec::Vec<u32>) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.task_order(&tasks))
            }
        }
        $crate::points::task_order::__export_task_order!(__TephraExport with_types_in $crate::points::task_order);
    };
    (victim_queue_order) => {
        impl $crate::points::victim_queue_order::exports::tephra::scheduler::victim_queue_order::Guest for __TephraExport {
            fn victim_queue_order(queues: ::std::vec::Vec<u32>, preemptor_queue: u32) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.victim_queue_order(&queues, preemptor_queue))
            }
        }
        $crate::points::victim_queue_order::__export_victim_queue_order!(__TephraExport with_types_in $crate::points::victim_queue_order);
    };
    (predicate) => {
        impl $crate::points::predicate::exports::tephra::scheduler::predicate::Guest for __TephraExport {
            fn predicate(task: u32, nodes: ::std::vec::Vec<u32>) -> $crate::types::Fit {
                __tephra(|rt| rt.predicate(task, &nodes))
            }
            fn predicate_node(task: u32, node: u32) -> u32 {
                __tephra(|rt| rt.predicate_node(task, node))
            }
            fn explain(code: u32) -> $crate::types::Reason {
                __tephra(|rt| rt.explain(code))
            }
        }
        $crate::points::predicate::__export_predicate!(__TephraExport with_types_in $crate::points::predicate);
    };
    (node_order) => {
        impl $crate::points::node_order::exports::tephra::scheduler::node_order::Guest for __TephraExport {
            fn node_order(task: u32, nodes: ::std::vec::Vec<u32>) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.node_order(task, &nodes))
            }
            fn node_score(task: u32, node: u32) -> f64 {
                __tephra(|rt| rt.node_score(task, node))
            }
        }
        $crate::points::node_order::__export_node_order!(__TephraExport with_types_in $crate::points::node_order);
    };
    (overused) => {
        impl $crate::points::overused::exports::tephra::scheduler::overused::Guest for __TephraExport {
            fn overused(queue: u32) -> bool {
                __tephra(|rt| rt.overused(queue))
            }
        }
        $crate::points::overused::__export_overused!(__TephraExport with_types_in $crate::points::overused);
    };
    (allocatable) => {
        impl $crate::points::allocatable::exports::tephra::scheduler::allocatable::Guest for __TephraExport {
            fn allocatable(queue: u32, task: u32) -> bool {
                __tephra(|rt| rt.allocatable(queue, task))
            }
        }
        $crate::points::allocatable::__export_allocatable!(__TephraExport with_types_in $crate::points::allocatable);
    };
    (preemptive) => {
        impl $crate::points::preemptive::exports::tephra::scheduler::preemptive::Guest for __TephraExport {
            fn preemptive(queue: u32, task: u32) -> bool {
                __tephra(|rt| rt.preemptive(queue, task))
            }
        }
        $crate::points::preemptive::__export_preemptive!(__TephraExport with_types_in $crate::points::preemptive);
    };
    (job_valid) => {
        impl $crate::points::job_valid::exports::tephra::scheduler::job_valid::Guest for __TephraExport {
            fn job_valid(job: u32) -> ::core::option::Option<::std::string::String> {
                __tephra(|rt| rt.job_valid(job))
            }
        }
        $crate::points::job_valid::__export_job_valid!(__TephraExport with_types_in $crate::points::job_valid);
    };
    (job_ready) => {
        impl $crate::points::job_ready::exports::tephra::scheduler::job_ready::Guest for __TephraExport {
            fn job_ready(job: u32) -> bool {
                __tephra(|rt| rt.job_ready(job))
            }
        }
        $crate::points::job_ready::__export_job_ready!(__TephraExport with_types_in $crate::points::job_ready);
    };
    (job_pipelined) => {
        impl $crate::points::job_pipelined::exports::tephra::scheduler::job_pipelined::Guest for __TephraExport {
            fn job_pipelined(job: u32) -> $crate::types::Vote {
                __tephra(|rt| rt.job_pipelined(job))
            }
        }
        $crate::points::job_pipelined::__export_job_pipelined!(__TephraExport with_types_in $crate::points::job_pipelined);
    };
    (job_enqueueable) => {
        impl $crate::points::job_enqueueable::exports::tephra::scheduler::job_enqueueable::Guest for __TephraExport {
            fn job_enqueueable(job: u32) -> $crate::types::Vote {
                __tephra(|rt| rt.job_enqueueable(job))
            }
        }
        $crate::points::job_enqueueable::__export_job_enqueueable!(__TephraExport with_types_in $crate::points::job_enqueueable);
    };
    (job_enqueued) => {
        impl $crate::points::job_enqueued::exports::tephra::scheduler::job_enqueued::Guest for __TephraExport {
            fn job_enqueued(job: u32) {
                __tephra(|rt| rt.job_enqueued(job))
            }
        }
        $crate::points::job_enqueued::__export_job_enqueued!(__TephraExport with_types_in $crate::points::job_enqueued);
    };
    (job_starving) => {
        impl $crate::points::job_starving::exports::tephra::scheduler::job_starving::Guest for __TephraExport {
            fn job_starving(job: u32) -> bool {
                __tephra(|rt| rt.job_starving(job))
            }
        }
        $crate::points::job_starving::__export_job_starving!(__TephraExport with_types_in $crate::points::job_starving);
    };
    (preemptable) => {
        impl $crate::points::preemptable::exports::tephra::scheduler::preemptable::Guest for __TephraExport {
            fn preemptable(preemptor: u32, candidates: ::std::vec::Vec<u32>) -> $crate::types::Victims {
                __tephra(|rt| rt.preemptable(preemptor, &candidates))
            }
        }
        $crate::points::preemptable::__export_preemptable!(__TephraExport with_types_in $crate::points::preemptable);
    };
    (reclaimable) => {
        impl $crate::points::reclaimable::exports::tephra::scheduler::reclaimable::Guest for __TephraExport {
            fn reclaimable(preemptor: u32, candidates: ::std::vec::Vec<u32>) -> $crate::types::Victims {
                __tephra(|rt| rt.reclaimable(preemptor, &candidates))
            }
        }
        $crate::points::reclaimable::__export_reclaimable!(__TephraExport with_types_in $crate::points::reclaimable);
    };
    (victim_tasks) => {
        impl $crate::points::victim_tasks::exports::tephra::scheduler::victim_tasks::Guest for __TephraExport {
            fn victim_tasks(candidates: ::std::vec::Vec<u32>) -> ::std::vec::Vec<u32> {
                __tephra(|rt| rt.victim_tasks(&candidates))
            }
        }
        $crate::points::victim_tasks::__export_victim_tasks!(__TephraExport with_types_in $crate::points::victim_tasks);
    };
    (target_job) => {
        impl $crate::points::target_job::exports::tephra::scheduler::target_job::Guest for __TephraExport {
            fn target_job(jobs: ::std::vec::Vec<u32>) -> ::core::option::Option<u32> {
                __tephra(|rt| rt.target_job(&jobs))
            }
        }
        $crate::points::target_job::__export_target_job!(__TephraExport with_types_in $crate::points::target_job);
    };
    (reserved_nodes) => {
        impl $crate::points::reserved_nodes::exports::tephra::scheduler::reserved_nodes::Guest for __TephraExport {
            fn reserved_nodes(
                owner: $crate::types::LockOwner,
                candidates: ::std::vec::Vec<u32>,
            ) -> ::core::result::Result<::std::vec::Vec<u32>, ::std::string::String> {
                __tephra(|rt| rt.reserved_nodes(owner, &candidates))
            }
        }
        $crate::points::reserved_nodes::__export_reserved_nodes!(__TephraExport with_types_in $crate::points::reserved_nodes);
    };
    (queue_status) => {
        impl $crate::points::queue_status::exports::tephra::scheduler::queue_status::Guest for __TephraExport {
            fn queue_status(queues: ::std::vec::Vec<u32>) -> $crate::types::QueueFigures {
                __tephra(|rt| rt.queue_status(&queues))
            }
        }
        $crate::points::queue_status::__export_queue_status!(__TephraExport with_types_in $crate::points::queue_status);
    };
    (hypernode_order) => {
        impl $crate::points::hypernode_order::exports::tephra::scheduler::hypernode_order::Guest for __TephraExport {
            fn hypernode_order(job: u32, subgroup: u32, hypernodes: ::std::vec::Vec<u32>) -> ::std::vec::Vec<f64> {
                __tephra(|rt| rt.hypernode_order(job, subgroup, &hypernodes))
            }
        }
        $crate::points::hypernode_order::__export_hypernode_order!(__TephraExport with_types_in $crate::points::hypernode_order);
    };
    (evictable) => {
        impl $crate::points::evictable::exports::tephra::scheduler::evictable::Guest for __TephraExport {
            fn evictable(
                kind: $crate::types::EvictionKind,
                job: u32,
                hypernode: u32,
                candidates: ::std::vec::Vec<u32>,
            ) -> $crate::types::Victims {
                __tephra(|rt| rt.evictable(kind, job, hypernode, &candidates))
            }
        }
        $crate::points::evictable::__export_evictable!(__TephraExport with_types_in $crate::points::evictable);
    };
}

/// Whether `listed` names exactly the points of `declared`, `events` aside
/// (order free): checked at compile time by [`export_plugin!`](crate::export_plugin).
#[doc(hidden)]
pub const fn same_points(declared: &[crate::ExtensionPoint], listed: &[crate::ExtensionPoint]) -> bool {
    let events = crate::ExtensionPoint::Events as u8;
    let mut i = 0;
    while i < declared.len() {
        if declared[i] as u8 != events && !contains(listed, declared[i] as u8) {
            return false;
        }
        i += 1;
    }
    let mut j = 0;
    while j < listed.len() {
        if listed[j] as u8 == events || !contains(declared, listed[j] as u8) {
            return false;
        }
        j += 1;
    }
    true
}

const fn contains(list: &[crate::ExtensionPoint], p: u8) -> bool {
    let mut i = 0;
    while i < list.len() {
        if list[i] as u8 == p {
            return true;
        }
        i += 1;
    }
    false
}
