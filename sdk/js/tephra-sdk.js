// The JavaScript SDK for tephra scheduling policies (the contract CONTRACT
// names; contract.js lists its points and columns, generated from wit/).
//
// A policy extends `Policy` and overrides the points it implements; `serve`
// turns it into the objects componentize-js exports (`session` and one per
// point), and `world` into the WIT world the build compiles against, so the
// component exports those points and nothing else. `Session` is the view of
// the columnar snapshot, kept current with the host's events and deltas;
// `SnapshotBuilder` builds one by hand for unit tests under plain Node.
//
// The module imports only contract.js (plain data): it runs under Node as it is.

import * as contract from './contract.js';

export { contract };
export const { CONTRACT } = contract;
export const NONE = 0xffffffff;

// Statuses in which a task holds resources on its node (Volcano's Used).
const ALLOCATED = new Set(['allocated', 'binding', 'bound', 'running']);
const READY = new Set([...ALLOCATED, 'succeeded']);

// (used, releasing, pipelined): the node columns a status counts in.
function shares(status) {
  if (ALLOCATED.has(status)) return [true, false, false];
  if (status === 'releasing') return [true, true, false];
  if (status === 'pipelined') return [false, false, true];
  return [false, false, false];
}

/** Resource rows: arrays over the snapshot's `dims`. */
export const resources = {
  EPSILON: 0.1,
  add: (a, b) => a.map((x, i) => x + b[i]),
  sub: (a, b) => a.map((x, i) => x - b[i]),
  fits: (request, idle) => request.every((r, i) => r <= idle[i] + resources.EPSILON),
  isEmpty: (row) => row.every((x) => x <= resources.EPSILON),
  share: (used, total) => used.reduce((m, u, i) => (total[i] > 0 ? Math.max(m, u / total[i]) : m), 0),
};

/** One scheduling session over the contract's snapshot (camelCase fields). */
export class Session {
  constructor(snap) {
    this.snap = snap;
    this.d = snap.dims.length;
    this.taskStatus = Array.from(snap.taskStatus);
    this.taskNode = Array.from(snap.taskNode);
    this.nodeUsed = Float64Array.from(snap.nodeUsed);
    this.nodeReleasing = Float64Array.from(snap.nodeReleasing);
    this.nodePipelined = Float64Array.from(snap.nodePipelined);
    this.jobTasks = Array.from({ length: snap.jobQueue.length }, () => []);
    snap.taskJob.forEach((j, t) => j < this.jobTasks.length && this.jobTasks[j].push(t));
    this.strings = null;
    this.labels = null;
    this.queueJobs = null;
  }

  nodes() { return this.snap.nodeUnschedulable.length; }
  queues() { return this.snap.queueParent.length; }
  jobs() { return this.snap.jobQueue.length; }
  tasks() { return this.snap.taskJob.length; }
  str(id) { return this.snap.strings[id] ?? ''; }
  strId(text) {
    if (this.strings === null) this.strings = new Map(this.snap.strings.map((s, i) => [s, i]));
    return this.strings.get(text);
  }
  dim(name) { const i = this.snap.dims.indexOf(name); return i < 0 ? undefined : i; }
  row(column, i) { return Array.from(column.slice(i * this.d, (i + 1) * this.d)); }
  taskRequest(t) { return this.row(this.snap.taskResreq, t); }
  nodeAllocatable(n) { return this.row(this.snap.nodeAllocatable, n); }
  nodeIdle(n) { return resources.sub(this.nodeAllocatable(n), this.row(this.nodeUsed, n)); }
  /** The node's labels as a Map key → value, shared (do not modify): every node is indexed on first use, in one pass. */
  nodeLabels(n) {
    if (this.labels === null) {
      this.labels = Array.from({ length: this.nodes() }, () => new Map());
      for (const l of this.snap.nodeLabels) this.labels[l.owner]?.set(this.str(l.key), this.str(l.value));
    }
    return this.labels[n] ?? new Map();
  }
  taskJob(t) { return this.snap.taskJob[t]; }
  taskNamespace(t) { return this.str(this.snap.taskNamespace[t]); }
  jobQueue(j) { return this.snap.jobQueue[j]; }
  /** The task holds resources on its node (allocated, binding, bound, running). */
  placed(t) { return ALLOCATED.has(this.taskStatus[t]); }
  // Named views: `s.node(n).idle().cpu()`, `s.task(t).job().queue().weight()`.
  node(n) { return new NodeView(this, n); }
  task(t) { return new TaskView(this, t); }
  job(j) { return new JobView(this, j); }
  queue(q) { return new QueueView(this, q); }
  hypernode(h) { return new HyperNodeView(this, h); }
  /** Whether a status holds resources on the node. */
  static holds(status) { return ALLOCATED.has(status); }
  jobReadyTasks(j) { return this.jobTasks[j].filter((t) => READY.has(this.taskStatus[t])).length; }

  /** Applies one event; returns the task's old status and node. */
  apply(e) {
    const t = e.task;
    const old = { status: this.taskStatus[t], node: this.taskNode[t] };
    this.place(t, old.node, old.status, -1);
    this.place(t, e.node, e.status, 1);
    this.taskStatus[t] = e.status;
    this.taskNode[t] = e.node;
    return old;
  }

  place(t, node, status, sign) {
    if (node === NONE || node >= this.nodes()) return;
    const d = this.d;
    const columns = [this.nodeUsed, this.nodeReleasing, this.nodePipelined];
    shares(status).forEach((on, c) => {
      if (!on) return;
      for (let k = 0; k < d; k++) columns[c][node * d + k] += sign * this.snap.taskResreq[t * d + k];
    });
  }

  /** Brings the session up to date with a `snapshot-delta`. */
  update(delta) {
    const d = this.d;
    const n = delta.tasks.length;
    if (delta.taskStatus.length !== n || delta.taskNode.length !== n || delta.taskStartedMs.length !== n || delta.nodeUsed.length !== delta.nodes.length * d
        || Array.from(delta.tasks).some((t) => t >= this.tasks()) || Array.from(delta.nodes).some((x) => x >= this.nodes())) {
      throw new Error('snapshot-delta does not fit the kept session (lengths or ids)');
    }
    for (let i = 0; i < n; i++) {
      this.taskStatus[delta.tasks[i]] = delta.taskStatus[i];
      this.taskNode[delta.tasks[i]] = delta.taskNode[i];
      this.snap.taskStartedMs[delta.tasks[i]] = delta.taskStartedMs[i];
    }
    delta.nodes.forEach((node, i) => {
      this.nodeUsed.set(delta.nodeUsed.slice(i * d, (i + 1) * d), node * d);
      this.nodeReleasing.set(delta.nodeReleasing.slice(i * d, (i + 1) * d), node * d);
      this.nodePipelined.set(delta.nodePipelined.slice(i * d, (i + 1) * d), node * d);
    });
    delta.residents.forEach((r, i) => { this.snap.residentNode[r] = delta.residentNode[i]; });
    for (const column of Object.keys(contract.DELTA)) {
      if (!DELTA_ROWS.has(column)) this.snap[column] = delta[column];
    }
  }
}

/** The delta's columns applied row by row (the rest replace the snapshot's column of the same name whole). */
export const DELTA_ROWS = new Set(['tasks', 'taskStatus', 'taskNode', 'taskStartedMs', 'nodes', 'nodeUsed',
  'nodeReleasing', 'nodePipelined', 'residents', 'residentNode']);

/**
 * Amounts over the snapshot's dimensions (a row, or a row minus another), read
 * by name: cpu in millicores, memory in bytes, pods, scalars in milli-units.
 */
export class Amounts {
  constructor(s, row, minus = null) { this.s = s; this.row = row; this.minus = minus; }
  at(d) { return this.row[d] - (this.minus === null ? 0 : this.minus[d]); }
  cpu() { return this.at(0); }
  memory() { return this.at(1); }
  pods() { return this.at(2); }
  /** A dimension by name ('nvidia.com/gpu'); 0 when the snapshot has none. */
  get(name) { const d = this.s.dim(name); return d === undefined ? 0 : this.at(d); }
  values() { return Array.from(this.row, (_, d) => this.at(d)); }
}

/** A node. */
export class NodeView {
  constructor(s, id) { this.s = s; this.id = id; }
  name() { return this.s.str(this.s.snap.nodeName[this.id]); }
  allocatable() { return new Amounts(this.s, this.s.nodeAllocatable(this.id)); }
  used() { return new Amounts(this.s, this.s.row(this.s.nodeUsed, this.id)); }
  idle() { return new Amounts(this.s, this.s.nodeAllocatable(this.id), this.s.row(this.s.nodeUsed, this.id)); }
  label(key) { return this.s.nodeLabels(this.id).get(key); }
  /** The lowest HyperNode holding the node (0: the whole cluster). */
  hypernode() { return new HyperNodeView(this.s, this.s.snap.nodeHypernode[this.id]); }
}

/** A task. */
export class TaskView {
  constructor(s, id) { this.s = s; this.id = id; }
  job() { return new JobView(this.s, this.s.taskJob(this.id)); }
  node() { const n = this.s.taskNode[this.id]; return n === NONE || n >= this.s.nodes() ? undefined : new NodeView(this.s, n); }
  status() { return this.s.taskStatus[this.id]; }
  request() { return new Amounts(this.s, this.s.taskRequest(this.id)); }
  namespace() { return this.s.taskNamespace(this.id); }
}

/** A job. */
export class JobView {
  constructor(s, id) { this.s = s; this.id = id; }
  queue() { return new QueueView(this.s, this.s.jobQueue(this.id)); }
  tasks() { return this.s.jobTasks[this.id].map((t) => new TaskView(this.s, t)); }
  minAvailable() { return this.s.snap.jobMinAvailable[this.id]; }
}

/** A queue. */
export class QueueView {
  constructor(s, id) { this.s = s; this.id = id; }
  weight() { return this.s.snap.queueWeight[this.id]; }
  parent() { const p = this.s.snap.queueParent[this.id]; return p === NONE ? undefined : new QueueView(this.s, p); }
  /** Its jobs; every queue's are indexed on first use, in one pass. */
  jobs() {
    const s = this.s;
    if (s.queueJobs === null) {
      s.queueJobs = Array.from({ length: s.queues() }, () => []);
      s.snap.jobQueue.forEach((q, j) => s.queueJobs[q]?.push(j));
    }
    return (s.queueJobs[this.id] ?? []).map((j) => new JobView(s, j));
  }
}

/** A HyperNode (0: the whole cluster, one tier above every other). */
export class HyperNodeView {
  constructor(s, id) { this.s = s; this.id = id; }
  name() { return this.s.str(this.s.snap.hypernodeName[this.id]); }
  tier() { return this.s.snap.hypernodeTier[this.id]; }
  /** The HyperNode above, unless this is the cluster. */
  parent() { const p = this.s.snap.hypernodeParent[this.id]; return p === NONE ? undefined : new HyperNodeView(this.s, p); }
}

/** Why a task does not fit a node; `unresolvable`: evictions cannot help. */
export class Unfit {
  constructor(message, unresolvable = false) {
    this.message = message;
    this.unresolvable = unresolvable;
  }
}

/**
 * Override the points you implement (ids are the snapshot's dense ids, `s`
 * the current Session). Throw a string in `open` to refuse a session.
 */
export class Policy {
  static NAME = 'unnamed';
  static VERSION = '0.1.0';
  /** Flush every event batch to the policy before the session closes. */
  static FLUSH_EVENTS = false;

  open(s, args) {}
  /** The next session continues this one: true keeps this object. */
  resume(s, args) { return false; }
  close(s) {}
  /** After the session applied `event`; `old`: the task's {status, node} before. */
  onEvent(s, event, old) {}
  queueOrder(s, queue) { return 0; }
  jobOrder(s, job) { return 0; }
  taskOrder(s, task) { return 0; }
  victimQueueOrder(s, queue, preemptorQueue) { return 0; }
  /** undefined fits; a string or an Unfit says why not. */
  predicate(s, task, node) { return undefined; }
  nodeScore(s, task, node) { return 0; }
  overused(s, queue) { return false; }
  allocatable(s, queue, task) { return true; }
  preemptive(s, queue, task) { return true; }
  jobValid(s, job) { return undefined; }
  jobReady(s, job) { return true; }
  jobPipelined(s, job) { return 'abstain'; }
  jobEnqueueable(s, job) { return 'abstain'; }
  jobEnqueued(s, job) {}
  jobStarving(s, job) { return false; }
  preemptable(s, preemptor, candidates) { return { tasks: [], vote: 'abstain' }; }
  reclaimable(s, preemptor, candidates) { return { tasks: [], vote: 'abstain' }; }
  victimTasks(s, candidates) { return []; }
  targetJob(s, jobs) { return undefined; }
  /** The nodes to lock; throw a string to refuse with a reason. */
  reservedNodes(s, owner, candidates) { return []; }
  queueStatus(s, queue) { return { deserved: new Array(s.d).fill(NaN), share: 0 }; }
  /** The score (higher first) of `hypernode` as the domain of `job`'s `subgroup` (NONE: the whole job). */
  hypernodeOrder(s, job, subgroup, hypernode) { return 0; }
  /** Gang eviction ('gang-preempt' or 'gang-reclaim'): which `candidates` (running tasks on `hypernode`) starving `job` may evict. */
  evictable(s, kind, job, hypernode, candidates) { return { tasks: [], vote: 'abstain' }; }
}

// Extension point (interface name) → the methods that make it: its first
// function's name, but for node-order, whose two functions come from nodeScore.
const METHODS = { 'node-order': ['nodeScore'] };
export const POINTS = Object.fromEntries(
  Object.entries(contract.POINT_FUNCTIONS).map(([p, fs]) => [p, METHODS[p] ?? fs.slice(0, 1)]),
);

const camel = (point) => point.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

/** The points `cls` overrides, as interface names. */
export function implemented(cls) {
  return Object.keys(POINTS).filter((p) => POINTS[p].some((m) => cls.prototype[m] !== Policy.prototype[m]));
}

/** The WIT world of a component serving `cls`. */
export function world(cls) {
  const lines = ['package local:plugin;', '', 'world plugin {', `    include tephra:scheduler/plugin@${CONTRACT};`];
  for (const p of implemented(cls)) lines.push(`    export tephra:scheduler/${p}@${CONTRACT};`);
  return [...lines, '}', ''].join('\n');
}

/**
 * The exports of a component serving policy class `cls`: `session` and one
 * object per implemented point, named as componentize-js expects
 * (`export const { session, nodeOrder } = serve(MyPolicy);`).
 */
export function serve(cls) {
  let policy = new cls();
  let session = null;
  let last = null;
  let reasons = [];
  let codes = new Map();
  const fail = (e) => { throw `${cls.NAME}: ${e instanceof Error ? e.message : e}`; };
  const code = (why) => {
    if (why === undefined || why === null) return 0;
    const u = typeof why === 'string' ? new Unfit(why) : why;
    const key = `${u.unresolvable ? 1 : 0}${u.message}`;
    if (!codes.has(key)) { reasons.push(u); codes.set(key, reasons.length); }
    return codes.get(key);
  };
  const reason = (u) => ({ message: u.message, unresolvable: u.unresolvable });
  const keys = (f) => (ids, ...rest) => Float64Array.from(ids, (i) => f(session, i, ...rest));
  const p = () => policy;
  const all = {
    session: {
      info: () => ({ name: cls.NAME, version: cls.VERSION, contract: CONTRACT, flushEvents: cls.FLUSH_EVENTS }),
      openSession(snapshot, args) {
        last = null; reasons = []; codes = new Map();
        policy = new cls();
        session = new Session(snapshot);
        try { policy.open(session, new Map(args)); } catch (e) { fail(e); }
      },
      updateSession(delta, args) {
        if (last === null) return false;
        const s = last;
        last = null; reasons = []; codes = new Map();
        try {
          s.update(delta);
          session = s;
          const a = new Map(args);
          if (!policy.resume(s, a)) { policy = new cls(); policy.open(s, a); }
        } catch (e) { fail(e); }
        return true;
      },
      closeSession() {
        if (session !== null) policy.close(session);
        last = session; session = null;
      },
      onEvents(events) { for (const e of events) all.session.onEvent(e); },
      onEvent(e) { if (session !== null) policy.onEvent(session, e, session.apply(e)); },
    },
    queueOrder: { queueOrder: keys((s, i) => p().queueOrder(s, i)) },
    jobOrder: { jobOrder: keys((s, i) => p().jobOrder(s, i)) },
    taskOrder: { taskOrder: keys((s, i) => p().taskOrder(s, i)) },
    victimQueueOrder: { victimQueueOrder: keys((s, i, q) => p().victimQueueOrder(s, i, q)) },
    predicate: {
      predicate(task, nodes) {
        const local = new Map();
        const out = new Uint8Array(nodes.length);
        nodes.forEach((n, i) => {
          const c = code(policy.predicate(session, task, n));
          if (c > 0) {
            if (!local.has(c)) local.set(c, Math.min(local.size + 1, 255));
            out[i] = local.get(c);
          }
        });
        return { codes: out, reasons: [...local.keys()].slice(0, 255).map((c) => reason(reasons[c - 1])) };
      },
      predicateNode: (task, node) => code(policy.predicate(session, task, node)),
      explain: (c) => reason(reasons[c - 1] ?? new Unfit(`${cls.NAME}: no reason has code ${c}`)),
    },
    nodeOrder: {
      nodeOrder: (task, nodes) => Float64Array.from(nodes, (n) => policy.nodeScore(session, task, n)),
      nodeScore: (task, node) => policy.nodeScore(session, task, node),
    },
    overused: { overused: (q) => policy.overused(session, q) },
    allocatable: { allocatable: (q, t) => policy.allocatable(session, q, t) },
    preemptive: { preemptive: (q, t) => policy.preemptive(session, q, t) },
    jobValid: { jobValid: (j) => policy.jobValid(session, j) },
    jobReady: { jobReady: (j) => policy.jobReady(session, j) },
    jobPipelined: { jobPipelined: (j) => policy.jobPipelined(session, j) },
    jobEnqueueable: { jobEnqueueable: (j) => policy.jobEnqueueable(session, j) },
    jobEnqueued: { jobEnqueued: (j) => policy.jobEnqueued(session, j) },
    jobStarving: { jobStarving: (j) => policy.jobStarving(session, j) },
    preemptable: { preemptable: (t, c) => policy.preemptable(session, t, c) },
    reclaimable: { reclaimable: (t, c) => policy.reclaimable(session, t, c) },
    victimTasks: { victimTasks: (c) => policy.victimTasks(session, c) },
    targetJob: { targetJob: (jobs) => policy.targetJob(session, jobs) },
    reservedNodes: { reservedNodes: (o, c) => policy.reservedNodes(session, o, c) },
    queueStatus: {
      queueStatus(queues) {
        const rows = Array.from(queues, (q) => policy.queueStatus(session, q));
        return { deserved: Float64Array.from(rows.flatMap((r) => Array.from(r.deserved))), share: Float64Array.from(rows, (r) => r.share) };
      },
    },
    hypernodeOrder: {
      hypernodeOrder: (job, subgroup, hypernodes) => Float64Array.from(hypernodes, (h) => policy.hypernodeOrder(session, job, subgroup, h)),
    },
    evictable: { evictable: (kind, job, h, c) => policy.evictable(session, kind, job, h, c) },
  };
  const out = { session: all.session };
  for (const point of implemented(cls)) out[camel(point)] = all[camel(point)];
  return out;
}

/** Snapshots built by hand, for unit tests under plain Node. */
export class SnapshotBuilder {
  constructor(dims = ['cpu', 'memory', 'pods']) {
    // Every column of the contract's snapshot (generated from wit/).
    const lists = Object.keys(contract.SNAPSHOT).filter((f) => contract.SNAPSHOT[f].startsWith('list<'));
    this.snap = Object.fromEntries(lists.map((f) => [f, []]));
    Object.assign(this.snap, { dims: [...dims], strings: [''], nowMs: 0n, total: new Array(dims.length).fill(0) });
    // The cluster's HyperNode (0), one tier above every other.
    Object.assign(this.snap, { hypernodeName: [0], hypernodeTier: [1], hypernodeParent: [NONE] });
  }

  string(text) {
    let i = this.snap.strings.indexOf(text);
    if (i < 0) { this.snap.strings.push(text); i = this.snap.strings.length - 1; }
    return i;
  }

  rowOf(values) { return this.snap.dims.map((_, i) => values[i] ?? 0); }

  node(name, allocatable, labels = {}) {
    const s = this.snap;
    const n = s.nodeUnschedulable.length;
    const row = this.rowOf(allocatable);
    s.nodeName.push(this.string(name));
    s.nodeAllocatable.push(...row);
    s.total = s.total.map((x, i) => x + row[i]);
    for (const c of [s.nodeUsed, s.nodeReleasing, s.nodePipelined]) c.push(...row.map(() => 0));
    s.nodeUnschedulable.push(false);
    s.nodeLockedJob.push(NONE);
    s.nodeLockedQueue.push(NONE);
    s.nodeHypernode.push(0);
    for (const [k, v] of Object.entries(labels)) s.nodeLabels.push({ owner: n, key: this.string(k), value: this.string(v) });
    return n;
  }

  /** A HyperNode of `tier` under `parent` (0: the cluster), the lowest one holding `nodes`; raises the cluster's tier above it. */
  hypernode(name, tier, parent = 0, nodes = []) {
    const s = this.snap;
    const h = s.hypernodeTier.length;
    s.hypernodeName.push(this.string(name)); s.hypernodeTier.push(tier); s.hypernodeParent.push(parent);
    s.hypernodeTier[0] = Math.max(s.hypernodeTier[0], tier + 1);
    for (const n of nodes) s.nodeHypernode[n] = h;
    return h;
  }

  queue(weight = 1) {
    const s = this.snap;
    s.queueParent.push(NONE); s.queueWeight.push(weight); s.queuePriority.push(0);
    s.queueReclaimable.push(true); s.queueState.push('open'); s.queueGuaranteed.push(false);
    return s.queueParent.length - 1;
  }

  job(queue, minAvailable = 1) {
    const s = this.snap;
    s.jobQueue.push(queue); s.jobMinAvailable.push(minAvailable); s.jobHasMinResources.push(false);
    s.jobPriority.push(0); s.jobPhase.push('inqueue'); s.jobCreatedMs.push(BigInt(s.jobQueue.length));
    s.jobHighestTier.push(NONE); s.jobTopology.push(false);
    return s.jobQueue.length - 1;
  }

  task(job, request, status = 'pending', node = NONE, namespace = 'default') {
    const s = this.snap;
    const t = s.taskJob.length;
    const row = this.rowOf(request);
    s.taskJob.push(job); s.taskStatus.push(status); s.taskNode.push(node); s.taskResreq.push(...row);
    s.taskPriority.push(0); s.taskPreemptable.push(true); s.taskRole.push(0);
    s.taskNamespace.push(this.string(namespace)); s.taskPriorityClass.push(0);
    s.taskCreatedMs.push(BigInt(t)); s.taskStartedMs.push(0n); s.taskEstimatedMs.push(0n); s.taskSubgroup.push(NONE);
    if (node !== NONE) {
      const columns = [s.nodeUsed, s.nodeReleasing, s.nodePipelined];
      shares(status).forEach((on, c) => on && row.forEach((x, k) => { columns[c][node * row.length + k] += x; }));
    }
    return t;
  }

  session() { return new Session(this.snap); }
}
