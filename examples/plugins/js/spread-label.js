// spread-label: a tephra node-order policy written in JavaScript.
//
// Score of node n for task t (summed with the other node-order plugins):
//   +10  when n carries the preferred label (argument `label`, "key=value";
//        "key" alone matches any value; absent or empty: no preference)
//   -1   per task of t's job already placed on n (spread a job's tasks)
//
// "Placed" means holding resources on the node, as the SDK's session view
// tracks it from the host's events: a score is one lookup per node.

import { NONE, Policy, Session, serve } from '../../../sdk/js/tephra-sdk.js';

const LABEL_BONUS = 10;

/** Parses the `label` argument: null (no preference) or {key, value|null}. */
export function parseLabel(raw) {
  const text = (raw ?? '').trim();
  if (text === '') return null;
  const eq = text.indexOf('=');
  const key = (eq < 0 ? text : text.slice(0, eq)).trim();
  if (key === '') throw `argument label: ${JSON.stringify(raw)} has an empty key`;
  return { key, value: eq < 0 ? null : text.slice(eq + 1).trim() };
}

export default class SpreadLabel extends Policy {
  static NAME = 'spread-label';
  static VERSION = '0.2.0';

  open(s, args) {
    const label = parseLabel(args.get('label'));
    this.bonus = Array.from({ length: s.nodes() }, (_, n) => {
      if (label === null) return 0;
      const v = s.nodeLabels(n).get(label.key);
      return v !== undefined && (label.value === null || v === label.value) ? LABEL_BONUS : 0;
    });
    // Per job, placed tasks per node.
    this.perJob = Array.from({ length: s.jobs() }, () => new Map());
    for (let t = 0; t < s.tasks(); t++) if (s.placed(t)) this.count(s, t, s.taskNode[t], 1);
  }

  count(s, t, node, step) {
    if (node === NONE) return;
    const m = this.perJob[s.taskJob(t)];
    m.set(node, (m.get(node) ?? 0) + step);
  }

  onEvent(s, e, old) {
    if (Session.holds(old.status)) this.count(s, e.task, old.node, -1);
    if (s.placed(e.task)) this.count(s, e.task, e.node, 1);
  }

  nodeScore(s, task, node) {
    return (this.bonus[node] ?? 0) - (this.perJob[s.taskJob(task)]?.get(node) ?? 0);
  }
}

export const { session, nodeOrder } = serve(SpreadLabel);
