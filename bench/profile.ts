import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadStepwiseLib } from './lib.js';
import { runCounts } from './count.js';
import { runLoopBenchmarks } from './loop.js';
import { runResumeBenchmarks } from './resume.js';
import { measureStoreAppend } from './store-append.js';

/**
 * One case under the profiler, then its top self-times (STYLE.md: profile before changing anything
 * for speed):
 *   npx tsx --cpu-prof --cpu-prof-dir .prof bench/profile.ts loop      (or: realistic, resume, sqlite, effects, store)
 *   npx tsx bench/profile.ts --summary .prof                          (self and inclusive times of the main thread's profile)
 *   node --max-semi-space-size=256 --import tsx bench/profile.ts count (subscriptions and bytes per step, see bench/count.ts)
 * Percentages are of the busy samples: idle time (mostly the bench's tsc compile before it starts) is left out.
 */

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
}

const IDLE = new Set(['(idle)', '(program)']);

function keyOf(frame: ProfileNode['callFrame']): string {
  const file = frame.url.replace(/^.*\/(node_modules\/[^/]+|src|bench)\//, '$1/');
  return `${frame.functionName || '(anonymous)'}  ${file}:${frame.lineNumber + 1}`;
}

function print(title: string, counts: Map<string, number>, busy: number, top: number): void {
  console.log(`\n${title}`);
  for (const [key, count] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * count) / busy).toFixed(1).padStart(5)}%  ${key}`);
  }
}

function summarise(dir: string, top = 40): void {
  // The largest: tsx's loader thread writes a small profile of its own beside the main thread's.
  const newest = readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort((a, b) => statSync(join(dir, a)).size - statSync(join(dir, b)).size)
    .at(-1);
  if (!newest) throw new Error(`no .cpuprofile in ${dir}`);
  const profile = JSON.parse(readFileSync(join(dir, newest), 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  for (const id of profile.samples) {
    const frame = byId.get(id)?.callFrame;
    if (!frame || IDLE.has(frame.functionName)) continue;
    busy += 1;
    const key = keyOf(frame);
    self.set(key, (self.get(key) ?? 0) + 1);
    // Each function once per sample, however often it recurses on the stack.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const onStack = byId.get(at)?.callFrame;
      if (onStack) seen.add(keyOf(onStack));
    }
    for (const seenKey of seen) if (/ (src|bench)\//.test(seenKey)) inclusive.set(seenKey, (inclusive.get(seenKey) ?? 0) + 1);
  }
  console.log(`${newest}: ${profile.samples.length} samples, ${busy} busy`);
  print('self time (% of busy samples)', self, busy, top);
  print('inclusive time of src and bench functions (% of busy samples)', inclusive, busy, top);
}

const [what, dir] = process.argv.slice(2);
if (what === '--summary') summarise(dir ?? '.prof');
else {
  const { lib, stores } = await loadStepwiseLib();
  const dataDir = mkdtempSync(join(tmpdir(), 'stepwise-profile-'));
  if (what === 'count') console.table(await runCounts(lib));
  else if (what === 'resume') console.log(await runResumeBenchmarks(lib));
  else if (what === 'store') console.log(await measureStoreAppend(stores, dataDir, { samples: 10 }));
  else if (what === 'sqlite' || what === 'effects') {
    console.log(await runLoopBenchmarks(lib, { rounds: 600, only: [what === 'sqlite' ? 'sqlite' : 'sqliteEffects'], sqlite: { stores, dataDir } }));
  }
  // `loop` (the best case) or `realistic`: stepwise's sampler only, so the profile is ours alone.
  else console.log(await runLoopBenchmarks(lib, { rounds: 600, only: [what === 'realistic' ? 'realistic' : 'stepwise'] }));
  rmSync(dataDir, { recursive: true, force: true });
}
