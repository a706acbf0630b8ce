// The JavaScript SDK under plain Node: node --test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NONE, Policy, SnapshotBuilder, implemented, world } from './tephra-sdk.js';

const moves = [
  [['pending', NONE], ['allocated', 1]],
  [['pipelined', 0], ['allocated', 0]],
  [['running', 1], ['releasing', 1]],
  [['allocated', 0], ['pending', NONE]],
];

function cluster(after) {
  const b = new SnapshotBuilder(['cpu', 'memory']);
  b.node('n0', [8000, 16e9]);
  b.node('n1', [8000, 16e9]);
  const j = b.job(b.queue(), 2);
  moves.forEach(([before, later], i) => {
    const [status, node] = after ? later : before;
    b.task(j, [100 * (i + 1), 1e9], status, node);
  });
  return b.session();
}

test('events bring the session to the snapshot they describe', () => {
  const s = cluster(false);
  moves.forEach(([before, [status, node]], t) => {
    const old = s.apply({ kind: 'allocate', task: t, node, status });
    assert.deepEqual(old, { status: before[0], node: before[1] });
  });
  const want = cluster(true);
  assert.deepEqual(s.taskStatus, want.taskStatus);
  for (const c of ['nodeUsed', 'nodeReleasing', 'nodePipelined']) assert.deepEqual(s[c], want[c], c);
  assert.deepEqual(Array.from(s.nodeReleasing), [0, 0, 300, 1e9]);
});

test('a delta moves tasks and rows, and one that does not fit is refused', () => {
  const s = cluster(false);
  const delta = {
    nowMs: 5n, tasks: [0], taskStatus: ['running'], taskNode: [1], taskStartedMs: [5n], nodes: [1],
    nodeUsed: [100, 1e9], nodeReleasing: [0, 0], nodePipelined: [0, 0], residents: [], residentNode: [],
    nodeLockedJob: [NONE, NONE], nodeLockedQueue: [NONE, NONE], jobPhase: ['running'], reservationTargets: [],
  };
  s.update(delta);
  assert.deepEqual([s.taskStatus[0], s.taskNode[0], Array.from(s.nodeUsed.slice(2, 4)), s.snap.nowMs], ['running', 1, [100, 1e9], 5n]);
  assert.throws(() => s.update({ ...delta, tasks: [99] }), /does not fit/);
});

test('the points are the methods overridden', () => {
  class Gate extends Policy {
    jobEnqueueable() { return 'reject'; }
    nodeScore() { return 1; }
  }
  assert.deepEqual(implemented(Gate), ['node-order', 'job-enqueueable']);
  assert.match(world(Gate), /export tephra:scheduler\/node-order@0\.7\.0;/);
  assert.deepEqual(implemented(Policy), []);
});

test('views read the columns they name', () => {
  const b = new SnapshotBuilder(['cpu', 'memory', 'pods', 'nvidia.com/gpu']);
  const n = b.node('gpu-1', [8000, 32e9, 110, 4000], { zone: 'east' });
  const q = b.queue(2);
  const j = b.job(q, 1);
  const t = b.task(j, [1000, 1e9, 1, 1000], 'running', n);
  b.task(j, [500, 0, 1, 0]);
  const s = b.session();
  const node = s.node(n);
  assert.deepEqual([node.name(), node.label('zone'), node.label('rack')], ['gpu-1', 'east', undefined]);
  assert.deepEqual([node.idle().cpu(), node.idle().get('nvidia.com/gpu'), node.used().memory()], [7000, 3000, 1e9]);
  assert.deepEqual(node.idle().values(), [7000, 31e9, 109, 3000]);
  const task = s.task(t);
  assert.deepEqual([task.job().id, task.node().id, task.request().pods(), task.status()], [j, n, 1, 'running']);
  assert.equal(s.task(t + 1).node(), undefined);
  assert.deepEqual([s.job(j).queue().weight(), s.job(j).tasks().length], [2, 2]);
  assert.deepEqual(s.queue(q).jobs().map((x) => x.id), [j]);
  assert.equal(s.queue(q).parent(), undefined);
});

test('HyperNode views walk up to the cluster', () => {
  const b = new SnapshotBuilder();
  const n = b.node('n1', [8000, 32e9, 110]);
  const other = b.node('n2', [8000, 32e9, 110]);
  const spine = b.hypernode('spine-0', 2);
  b.hypernode('rack-0', 1, spine, [n]);
  const s = b.session();
  const rack = s.node(n).hypernode();
  assert.deepEqual([rack.name(), rack.tier()], ['rack-0', 1]);
  assert.deepEqual([rack.parent().name(), rack.parent().tier()], ['spine-0', 2]);
  const cluster = rack.parent().parent();
  assert.deepEqual([cluster.id, cluster.tier(), cluster.parent()], [0, 3, undefined]);
  assert.equal(s.node(other).hypernode().id, 0);
});
