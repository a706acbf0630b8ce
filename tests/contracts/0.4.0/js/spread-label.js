// spread-label: a tephra node-order policy written in JavaScript.
//
// Score of node n for task t (summed with the other node-order plugins):
//   +10  when n carries the preferred label (argument `label`, "key=value";
//        "key" alone matches any value; absent or empty: no preference)
//   -1   per task of t's job already placed on n (spread a job's tasks)
//
// "Placed" means holding resources on the node: allocated, binding, bound,
// running or pipelined, which is exactly what the host's allocate/deallocate
// events track. The placement counts are built from `task-node`/`task-job`
// at open-session and kept current by `on-events`, so a node-order call is one
// array read (and at most one Map lookup) per candidate node.
//
// Every other export of the contract answers Volcano's neutral value: the host
// calls only the points listed in `info().points`, but the component must
// export them all.

import { log } from 'tephra:scheduler/host@0.4.0';

const NAME = 'spread-label';
const VERSION = '0.1.0';
const CONTRACT = '0.4.0';
const NONE = 0xffffffff;
const LABEL_BONUS = 10;
// Statuses in which a task holds resources on its node (host's allocate events).
const PLACED = new Set(['allocated', 'binding', 'bound', 'running', 'pipelined']);

/** Parses the `label` argument: null (no preference) or {key, value|null}. */
function parseLabel(raw) {
  if (raw === undefined) return null;
  const text = raw.trim();
  if (text === '') return null;
  const eq = text.indexOf('=');
  const key = (eq < 0 ? text : text.slice(0, eq)).trim();
  const value = eq < 0 ? null : text.slice(eq + 1).trim();
  if (key === '') throw `${NAME}: argument label: ${JSON.stringify(raw)} has an empty key`;
  return { key, value };
}

/** One session's state: label bonus per node, placements per job and node. */
class State {
  constructor(snapshot, label) {
    const nodes = snapshot.nodeUnschedulable.length;
    const jobs = snapshot.jobQueue.length;
    this.nodes = nodes;
    this.jobs = jobs;
    this.taskJob = Uint32Array.from(snapshot.taskJob);

    // +LABEL_BONUS on nodes carrying the label. Strings are interned, so
    // resolve the key (and value) to ids once.
    this.bonus = new Float64Array(nodes);
    if (label !== null) {
      let keyId = -1;
      let valueId = -1;
      const strings = snapshot.strings;
      for (let i = 0; i < strings.length; i++) {
        if (strings[i] === label.key) keyId = i;
        if (label.value !== null && strings[i] === label.value) valueId = i;
      }
      if (keyId >= 0 && (label.value === null || valueId >= 0)) {
        for (const l of snapshot.nodeLabels) {
          if (l.key === keyId && (label.value === null || l.value === valueId) && l.owner < nodes) {
            this.bonus[l.owner] = LABEL_BONUS;
          }
        }
      }
    }

    // Where each task is counted (NONE: not placed), and per job a Map
    // node -> number of its placed tasks (absent while the job has none).
    const tasks = this.taskJob.length;
    this.placedOn = new Uint32Array(tasks).fill(NONE);
    this.perJob = new Array(jobs).fill(null);
    const status = snapshot.taskStatus;
    const node = snapshot.taskNode;
    for (let t = 0; t < tasks; t++) {
      if (node[t] !== NONE && PLACED.has(status[t])) this.add(t, node[t]);
    }
  }

  add(t, n) {
    const j = this.taskJob[t];
    if (n >= this.nodes || j >= this.jobs) return;
    let m = this.perJob[j];
    if (m === null) m = this.perJob[j] = new Map();
    m.set(n, (m.get(n) ?? 0) + 1);
    this.placedOn[t] = n;
  }

  remove(t) {
    const n = this.placedOn[t];
    if (n === NONE) return;
    this.placedOn[t] = NONE;
    const m = this.perJob[this.taskJob[t]];
    const c = m.get(n) - 1;
    if (c > 0) m.set(n, c);
    else m.delete(n);
  }

  apply(e) {
    if (e.task >= this.placedOn.length) return;
    // A task is counted at most once: an allocate moves it, a deallocate
    // removes it from where it was counted.
    this.remove(e.task);
    if (e.kind === 'allocate' && e.node !== NONE && PLACED.has(e.status)) this.add(e.task, e.node);
  }

  scores(task, nodes) {
    const out = new Float64Array(nodes.length);
    const bonus = this.bonus;
    const m = task < this.taskJob.length ? this.perJob[this.taskJob[task]] : null;
    if (m === null || m === undefined || m.size === 0) {
      for (let i = 0; i < nodes.length; i++) {
        const n = nodes[i];
        out[i] = n < this.nodes ? bonus[n] : 0;
      }
    } else {
      for (let i = 0; i < nodes.length; i++) {
        const n = nodes[i];
        out[i] = (n < this.nodes ? bonus[n] : 0) - (m.get(n) ?? 0);
      }
    }
    return out;
  }
}

let state = null;
let dims = 0;

function zeros(n) {
  return new Float64Array(n);
}

export const policy = {
  info() {
    return { name: NAME, version: VERSION, contract: CONTRACT, points: ['node-order'] };
  },

  openSession(snapshot, args) {
    state = null;
    dims = snapshot.dims.length;
    let raw;
    for (const [key, value] of args) {
      if (key === 'label') raw = value;
    }
    const label = parseLabel(raw); // throws the err string of result<_, string>
    state = new State(snapshot, label);
    log('debug', `${NAME}: ${state.nodes} nodes, label ${label === null ? 'none' : raw.trim()}`);
  },

  updateSession(delta, args) {
    // Sessions are not kept: the host sends the whole snapshot instead.
    return false;
  },

  closeSession() {
    state = null;
  },

  onEvents(events) {
    if (state === null) return;
    for (const e of events) state.apply(e);
  },

  // One event at a time: the host's usual delivery between two placements.
  onEvent(event) {
    if (state !== null) state.apply(event);
  },

  nodeOrder(task, nodes) {
    return state === null ? zeros(nodes.length) : state.scores(task, nodes);
  },

  // One node: the host's usual question after a placement.
  nodeScore(task, node) {
    return state === null ? 0 : state.scores(task, [node])[0];
  },

  // Neutral answers for the points this policy does not implement.
  queueOrder: (queues) => zeros(queues.length),
  jobOrder: (jobs) => zeros(jobs.length),
  taskOrder: (tasks) => zeros(tasks.length),
  victimQueueOrder: (queues, _preemptorQueue) => zeros(queues.length),
  predicate: (_task, nodes) => ({ codes: new Uint8Array(nodes.length), reasons: [] }),
  predicateNode: (_task, _node) => 0,
  // No code is ever answered, so none is explained.
  explain: (code) => ({ message: `${NAME}: no reason has code ${code}`, unresolvable: false }),
  overused: (_queue) => false,
  allocatable: (_queue, _task) => true,
  preemptive: (_queue, _task) => true,
  jobValid: (_job) => undefined,
  jobReady: (_job) => true,
  jobPipelined: (_job) => 'abstain',
  jobEnqueueable: (_job) => 'abstain',
  jobEnqueued: (_job) => {},
  jobStarving: (_job) => false,
  preemptable: (_preemptor, _candidates) => ({ tasks: [], vote: 'abstain' }),
  reclaimable: (_preemptor, _candidates) => ({ tasks: [], vote: 'abstain' }),
  victimTasks: (_candidates) => [],
  targetJob: (_jobs) => undefined,
  // result<list<u32>, string>: return the ok list (lock nothing); `throw "reason"` refuses.
  reservedNodes: (_owner, _candidates) => [],
  // The SDK's neutral answer: an unknown (NaN) deserved row and share 0.
  queueStatus: (queues) => ({
    deserved: new Float64Array(dims * queues.length).fill(NaN),
    share: zeros(queues.length),
  }),
};
