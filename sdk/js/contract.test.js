// The SDK against the whole contract, as generated from wit/ (contract.js):
// a point, column or case added to the WIT and not to the SDK fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CONTRACT, DELTA_ROWS, NONE, POINTS, Policy, SnapshotBuilder, contract, serve, world } from './tephra-sdk.js';

const camel = (p) => p.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

/** A policy overriding every method: it implements every point. */
function everything() {
  class Everything extends Policy {}
  for (const m of Object.values(POINTS).flat()) {
    Everything.prototype[m] = function (...a) { return Policy.prototype[m].apply(this, a); };
  }
  return Everything;
}

test('every point is served with exactly its functions', () => {
  assert.deepEqual(Object.keys(POINTS), Object.keys(contract.POINT_FUNCTIONS));
  const out = serve(everything());
  for (const [point, functions] of Object.entries(contract.POINT_FUNCTIONS)) {
    assert.deepEqual(Object.keys(out[camel(point)] ?? {}).sort(), [...functions].sort(), point);
  }
  const lines = world(everything()).split('\n');
  assert.ok(lines.includes(`    include tephra:scheduler/plugin@${CONTRACT};`));
  for (const point of Object.keys(contract.POINT_FUNCTIONS)) {
    assert.ok(lines.includes(`    export tephra:scheduler/${point}@${CONTRACT};`), point);
  }
});

test('the builder fills every column', () => {
  const b = new SnapshotBuilder();
  b.task(b.job(b.queue()), [100], 'running', b.node('n0', [1000]));
  for (const column of Object.keys(contract.SNAPSHOT)) assert.ok(column in b.snap, column);
});

test('a delta brings every column', () => {
  const b = new SnapshotBuilder(['cpu']);
  b.task(b.job(b.queue()), [100], 'pending', b.node('n0', [1000]));
  const s = b.session();
  const rows = {
    tasks: [0], taskStatus: ['running'], taskNode: [0], taskStartedMs: [7n], nodes: [0], nodeUsed: [100],
    nodeReleasing: [0], nodePipelined: [0], residents: [], residentNode: [],
  };
  assert.deepEqual(new Set(Object.keys(rows)), DELTA_ROWS);
  const whole = Object.fromEntries(Object.entries(contract.DELTA).filter(([c]) => !DELTA_ROWS.has(c))
    .map(([c, ty]) => [c, ty.startsWith('list<') ? [`set ${c}`] : 12345n]));
  s.update({ ...rows, ...whole });
  for (const [column, value] of Object.entries(whole)) assert.deepEqual(s.snap[column], value, column);
  assert.deepEqual([s.taskStatus[0], s.taskNode[0], s.snap.taskStartedMs[0]], ['running', 0, 7n]);
});

test('names are the contract\'s', () => {
  const p = new Policy();
  const s = new SnapshotBuilder().session();
  assert.ok(contract.ENUMS.vote.includes(p.jobPipelined(s, 0)));
  assert.ok(contract.ENUMS.vote.includes(p.evictable(s, contract.ENUMS.evictionKind[0], 0, 0, []).vote));
  assert.ok(['allocated', 'binding', 'bound', 'running'].every((x) => contract.ENUMS.taskStatus.includes(x)));
  assert.equal(NONE, 0xffffffff);
});
