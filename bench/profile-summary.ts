/**
 * Summarises a V8 `.cpuprofile` (from `npm run bench -- --cpu-prof` or `node --cpu-prof …`): the functions with the
 * most self time, and self time grouped by package / source folder.
 *
 * Usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> [top N] [inclusive-filter, default /src/]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

const file = process.argv[2];
if (!file) {
  console.error('Usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> [top N]');
  process.exit(1);
}
const top = Number(process.argv[3] ?? 30);
/** Inclusive time is listed for functions whose file path contains this (default: the project's own code). */
const inclusiveFilter = process.argv[4] ?? '/src/';
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const totalUs = profile.endTime - profile.startTime;

const where = (url: string): string => {
  if (!url) return '(native/V8)';
  const path = url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1]!;
  if (path.startsWith('node:')) return 'node core';
  const src = /\/(src|bench|examples)\/(.*)\/[^/]+$/.exec(path);
  if (src) return `${src[1]}/${src[2]}`;
  const own = /\/(src|bench|examples)\/[^/]+$/.exec(path);
  return own ? own[1]! : path;
};

const fnSelf = new Map<string, number>();
const groupSelf = new Map<string, number>();
for (const [id, us] of selfUs) {
  const node = byId.get(id);
  if (!node) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const short = url
    .replace(/^file:\/\//, '')
    .replace(/.*node_modules\//, '')
    .replace(/.*\/(src|bench|examples)\//, '$1/');
  const key = `${functionName || '(anonymous)'}  ${short ? `${short}:${lineNumber + 1}` : ''}`;
  fnSelf.set(key, (fnSelf.get(key) ?? 0) + us);
  const group = where(url);
  groupSelf.set(group, (groupSelf.get(group) ?? 0) + us);
}

// Inclusive (total) time per function, counting a function once per stack even when it recurses.
const inclusiveUs = new Map<number, number>();
const inclusiveOf = (id: number): number => {
  const cached = inclusiveUs.get(id);
  if (cached !== undefined) return cached;
  const node = byId.get(id);
  let us = selfUs.get(id) ?? 0;
  for (const child of node?.children ?? []) us += inclusiveOf(child);
  inclusiveUs.set(id, us);
  return us;
};
const fnKey = (node: ProfileNode): string => {
  const { functionName, url, lineNumber } = node.callFrame;
  const short = url
    .replace(/^file:\/\//, '')
    .replace(/.*node_modules\//, '')
    .replace(/.*\/(src|bench|examples)\//, '$1/');
  return `${functionName || '(anonymous)'}  ${short ? `${short}:${lineNumber + 1}` : ''}`;
};
const fnTotal = new Map<string, number>();
const onStack = new Map<string, number>();
const root = profile.nodes[0];
const walk = (id: number): void => {
  const node = byId.get(id);
  if (!node) return;
  const key = fnKey(node);
  const depth = onStack.get(key) ?? 0;
  if (depth === 0 && node.callFrame.url.includes(inclusiveFilter)) fnTotal.set(key, (fnTotal.get(key) ?? 0) + inclusiveOf(id));
  onStack.set(key, depth + 1);
  for (const child of node.children ?? []) walk(child);
  onStack.set(key, depth);
};
if (root) walk(root.id);

const pct = (us: number): string => `${((us / totalUs) * 100).toFixed(1).padStart(5)}%`;
console.log(`Profile ${file}: ${(totalUs / 1000).toFixed(0)} ms\n\nSelf time by package / folder:`);
for (const [group, us] of [...groupSelf].sort((a, b) => b[1] - a[1]).slice(0, 25))
  console.log(`  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${group}`);
console.log(`\nTop ${top} functions by self time:`);
for (const [key, us] of [...fnSelf].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`);
console.log(`\nTop ${top} functions by inclusive time (file path contains "${inclusiveFilter}"):`);
for (const [key, us] of [...fnTotal].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`);
