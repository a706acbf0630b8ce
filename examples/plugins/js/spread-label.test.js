// Unit tests of spread-label under plain Node (node --test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import SpreadLabel, { parseLabel } from './spread-label.js';
import { NONE, SnapshotBuilder, implemented } from '../../../sdk/js/tephra-sdk.js';

test('the labelled node scores 10, minus the job tasks placed on it', () => {
  const b = new SnapshotBuilder();
  const east = b.node('east-1', [16000, 32e9, 110], { zone: 'east' });
  const west = b.node('west-1', [16000, 32e9, 110], { zone: 'west' });
  const j = b.job(b.queue(), 2);
  const t0 = b.task(j, [1000], 'pending');
  const t1 = b.task(j, [1000], 'pending');
  const s = b.session();
  const p = new SpreadLabel();
  p.open(s, new Map([['label', 'zone=east']]));
  assert.deepEqual([p.nodeScore(s, t1, east), p.nodeScore(s, t1, west)], [10, 0]);
  const e = { kind: 'allocate', task: t0, node: east, status: 'allocated' };
  p.onEvent(s, e, s.apply(e));
  assert.equal(p.nodeScore(s, t1, east), 9);
  const back = { kind: 'deallocate', task: t0, node: NONE, status: 'pending' };
  p.onEvent(s, back, s.apply(back));
  assert.equal(p.nodeScore(s, t1, east), 10);
});

test('a label with an empty key is refused', () => {
  assert.throws(() => parseLabel('=east'), /empty key/);
});

test('it implements node-order only', () => {
  assert.deepEqual(implemented(SpreadLabel), ['node-order']);
});
