#!/usr/bin/env node
// `node world.js MODULE.js`: the WIT world of the policy MODULE serves (its
// default export), and a check that the module exports every point the
// policy implements (`export const { session, ... } = serve(Policy)`).
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { implemented, world } from './tephra-sdk.js';

const [file] = process.argv.slice(2);
if (!file) {
  console.error('usage: node world.js MODULE.js');
  process.exit(2);
}
const m = await import(pathToFileURL(resolve(file)).href);
const cls = m.default;
if (typeof cls !== 'function') {
  console.error(`${file}: export the policy class as the default export`);
  process.exit(1);
}
const camel = (p) => p.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
const missing = ['session', ...implemented(cls).map(camel)].filter((name) => m[name] === undefined);
if (missing.length > 0) {
  console.error(`${file}: does not export ${missing.join(', ')} (export const { session, ... } = serve(${cls.name}))`);
  process.exit(1);
}
process.stdout.write(world(cls));
