// Generated from wit/scheduler.wit by tephra-codegen; do not edit (cargo run -p tephra-codegen).
// One row per extension point, expanded by `point_bindings!` in points.rs.

point_bindings! {
    queue_order => "package tephra:sdk; world queue-order { export tephra:scheduler/queue-order@0.7.0; }", "__export_queue_order", "tephra_sdk::points::queue_order";
    job_order => "package tephra:sdk; world job-order { export tephra:scheduler/job-order@0.7.0; }", "__export_job_order", "tephra_sdk::points::job_order";
    task_order => "package tephra:sdk; world task-order { export tephra:scheduler/task-order@0.7.0; }", "__export_task_order", "tephra_sdk::points::task_order";
    victim_queue_order => "package tephra:sdk; world victim-queue-order { export tephra:scheduler/victim-queue-order@0.7.0; }", "__export_victim_queue_order", "tephra_sdk::points::victim_queue_order";
    predicate => "package tephra:sdk; world predicate { export tephra:scheduler/predicate@0.7.0; }", "__export_predicate", "tephra_sdk::points::predicate", "tephra:scheduler/types@0.7.0";
    node_order => "package tephra:sdk; world node-order { export tephra:scheduler/node-order@0.7.0; }", "__export_node_order", "tephra_sdk::points::node_order";
    overused => "package tephra:sdk; world overused { export tephra:scheduler/overused@0.7.0; }", "__export_overused", "tephra_sdk::points::overused";
    allocatable => "package tephra:sdk; world allocatable { export tephra:scheduler/allocatable@0.7.0; }", "__export_allocatable", "tephra_sdk::points::allocatable";
    preemptive => "package tephra:sdk; world preemptive { export tephra:scheduler/preemptive@0.7.0; }", "__export_preemptive", "tephra_sdk::points::preemptive";
    job_valid => "package tephra:sdk; world job-valid { export tephra:scheduler/job-valid@0.7.0; }", "__export_job_valid", "tephra_sdk::points::job_valid";
    job_ready => "package tephra:sdk; world job-ready { export tephra:scheduler/job-ready@0.7.0; }", "__export_job_ready", "tephra_sdk::points::job_ready";
    job_pipelined => "package tephra:sdk; world job-pipelined { export tephra:scheduler/job-pipelined@0.7.0; }", "__export_job_pipelined", "tephra_sdk::points::job_pipelined", "tephra:scheduler/types@0.7.0";
    job_enqueueable => "package tephra:sdk; world job-enqueueable { export tephra:scheduler/job-enqueueable@0.7.0; }", "__export_job_enqueueable", "tephra_sdk::points::job_enqueueable", "tephra:scheduler/types@0.7.0";
    job_enqueued => "package tephra:sdk; world job-enqueued { export tephra:scheduler/job-enqueued@0.7.0; }", "__export_job_enqueued", "tephra_sdk::points::job_enqueued";
    job_starving => "package tephra:sdk; world job-starving { export tephra:scheduler/job-starving@0.7.0; }", "__export_job_starving", "tephra_sdk::points::job_starving";
    preemptable => "package tephra:sdk; world preemptable { export tephra:scheduler/preemptable@0.7.0; }", "__export_preemptable", "tephra_sdk::points::preemptable", "tephra:scheduler/types@0.7.0";
    reclaimable => "package tephra:sdk; world reclaimable { export tephra:scheduler/reclaimable@0.7.0; }", "__export_reclaimable", "tephra_sdk::points::reclaimable", "tephra:scheduler/types@0.7.0";
    victim_tasks => "package tephra:sdk; world victim-tasks { export tephra:scheduler/victim-tasks@0.7.0; }", "__export_victim_tasks", "tephra_sdk::points::victim_tasks";
    target_job => "package tephra:sdk; world target-job { export tephra:scheduler/target-job@0.7.0; }", "__export_target_job", "tephra_sdk::points::target_job";
    reserved_nodes => "package tephra:sdk; world reserved-nodes { export tephra:scheduler/reserved-nodes@0.7.0; }", "__export_reserved_nodes", "tephra_sdk::points::reserved_nodes", "tephra:scheduler/types@0.7.0";
    queue_status => "package tephra:sdk; world queue-status { export tephra:scheduler/queue-status@0.7.0; }", "__export_queue_status", "tephra_sdk::points::queue_status", "tephra:scheduler/types@0.7.0";
    hypernode_order => "package tephra:sdk; world hypernode-order { export tephra:scheduler/hypernode-order@0.7.0; }", "__export_hypernode_order", "tephra_sdk::points::hypernode_order";
    evictable => "package tephra:sdk; world evictable { export tephra:scheduler/evictable@0.7.0; }", "__export_evictable", "tephra_sdk::points::evictable", "tephra:scheduler/types@0.7.0";
}
