import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchEntry } from './bench-entry.js';
import { loadStepwiseLib } from './lib.js';
import { measureImportTime } from './import-time.js';
import { runLoopBenchmarks } from './loop.js';
import { runPausedBenchmarks } from './paused.js';
import { runRestartBenchmarks } from './restart.js';
import { runResumeBenchmarks } from './resume.js';
import { settle, within } from './scenario.js';
import { measureStoreAppend } from './store-append.js';

/**
 * `npm run bench` (README.md, Benchmarks): runs every case, prints a table and writes bench/results.json as
 * `[{name, value, unit, baseline?, ratio?}]`. The targets are issue 9's (and issue 10's for the
 * durable store); they are printed, not enforced, because figures on a shared machine are evidence,
 * not tests. The SQLite cases write real files in a temp dir, removed at the end.
 */

interface Target {
  readonly describe: string;
  readonly met: (entry: BenchEntry) => boolean;
}

const TARGETS: Readonly<Record<string, Target>> = {
  loop_step: { describe: 'ratio ≤ 2', met: (e) => (e.ratio ?? Infinity) <= 2 },
  loop_step_realistic: { describe: 'ratio ≤ 3', met: (e) => (e.ratio ?? Infinity) <= 3 },
  resume_in_process: { describe: '≤ 60 µs', met: (e) => e.value <= 60 },
  paused_heap_per_run: { describe: '≤ 10 KB', met: (e) => e.value <= 10 },
  paused_resolve_after_deadline: { describe: '< 1000 ms', met: (e) => e.value < 1000 },
  // "Back to its start level": allow the controller's bounded memory of resolved pause ids.
  paused_heap_after_release: { describe: '≈ 0 (< 0.5 KB)', met: (e) => e.value < 0.5 },
  store_append: { describe: '≥ 100 000 frames/s', met: (e) => e.value >= 100_000 },
  restart_recover: { describe: '≤ 2000 ms', met: (e) => e.value <= 2000 },
  loop_step_otel_noop: { describe: 'ratio ≤ 1.05', met: (e) => (e.ratio ?? Infinity) <= 1.05 },
  // Issue 9's wire targets.
  resume_wire: { describe: '≤ 2 ms', met: (e) => e.value <= 2 },
  fanout_1: { describe: 'ratio ≥ 1', met: (e) => (e.ratio ?? 0) >= 1 },
  fanout_10: { describe: 'ratio ≥ 1', met: (e) => (e.ratio ?? 0) >= 1 },
  fanout_100: { describe: 'ratio ≥ 1', met: (e) => (e.ratio ?? 0) >= 1 },
  // Issue 22: against a server that makes each frame's bytes once and sends that Buffer to every client.
  fanout_1_best: { describe: 'ratio ≥ 1', met: (e) => (e.ratio ?? 0) >= 1 },
  fanout_10_best: { describe: 'ratio ≥ 1', met: (e) => (e.ratio ?? 0) >= 1 },
  fanout_100_best: { describe: 'ratio ≥ 1', met: (e) => (e.ratio ?? 0) >= 1 },
  // Issues 11 and 21, with the lease bench/cluster.ts uses (1000 ms).
  cluster_resume: { describe: '≤ 1 ms', met: (e) => e.value <= 1 },
  cluster_resume_p99: { describe: '≤ 5 ms', met: (e) => e.value <= 5 },
  cluster_fanout: { describe: 'ratio ≥ 0.5', met: (e) => (e.ratio ?? 0) >= 0.5 },
  failover: { describe: '≤ lease + 1000 ms (2000)', met: (e) => e.value <= 2000 },
  // Issue 23: a program pays for a provider, store or the server only when it uses one.
  import_time: { describe: 'ratio ≤ 1.5', met: (e) => (e.ratio ?? Infinity) <= 1.5 },
  agui_resume: { describe: '≤ 2 ms', met: (e) => e.value <= 2 },
  webhook_latency: { describe: '≤ 50 ms', met: (e) => e.value <= 50 },
  paused_resident_per_run: { describe: '≤ 1 KB', met: (e) => e.value <= 1 },
  resume_hibernated: { describe: '≤ 2 ms', met: (e) => e.value <= 2 },
  restart_recover_100k: { describe: '≤ 3000 ms', met: (e) => e.value <= 3000 },
  paused_resolve_after_deadline_hibernated: { describe: '< 1000 ms', met: (e) => e.value < 1000 },
  server_rss_per_paused_run: { describe: '≤ 4 KB', met: (e) => e.value <= 4 },
  // A durable step against a hand-written durable loop: `loop_step_sqlite` and `durable_throughput` are still
  // reported, their targets retired for these.
  durable_step_limit: { describe: 'ratio ≤ 2', met: (e) => (e.ratio ?? Infinity) <= 2 },
  durable_step_limit_idempotent: { describe: 'ratio ≤ 2', met: (e) => (e.ratio ?? Infinity) <= 2 },
  durable_step_flat: { describe: 'ratio ≤ 1.2', met: (e) => (e.ratio ?? Infinity) <= 1.2 },
  // Issue 37: a child run's step and resume against the same at the root.
  nested_step: { describe: 'ratio ≤ 1.2', met: (e) => (e.ratio ?? Infinity) <= 1.2 },
  nested_resume: { describe: 'ratio ≤ 1.3', met: (e) => (e.ratio ?? Infinity) <= 1.3 },
};

/** The wire cases live in bench/wire.ts, written separately; a missing file is skipped, not an error. */
async function runWire(notes: string[]): Promise<BenchEntry[]> {
  const url = new URL('./wire.ts', import.meta.url);
  if (!existsSync(fileURLToPath(url))) {
    notes.push('wire: bench/wire.ts not found, resume_wire and fanout_* skipped');
    return [];
  }
  // A computed specifier, so type checking does not require the file to exist.
  const specifier = './wire.js';
  const wire = (await import(specifier)) as { runWireBenchmarks?: () => unknown };
  if (typeof wire.runWireBenchmarks !== 'function') {
    notes.push('wire: bench/wire.ts has no runWireBenchmarks export, skipped');
    return [];
  }
  const output = (await wire.runWireBenchmarks()) as BenchEntry[] | { entries: BenchEntry[]; notes?: string[] };
  if (Array.isArray(output)) return output;
  notes.push(...(output.notes ?? []));
  return output.entries;
}

function printTable(entries: readonly BenchEntry[]): void {
  const rows = entries.map((e) => {
    const target = TARGETS[e.name];
    return {
      name: e.name,
      value: String(e.value),
      unit: e.unit,
      baseline: e.baseline === undefined ? '' : String(e.baseline),
      ratio: e.ratio === undefined ? '' : `${e.ratio}×`,
      target: target ? `${target.met(e) ? 'met' : 'MISSED'} (${target.describe})` : '',
    };
  });
  const columns = ['name', 'value', 'unit', 'baseline', 'ratio', 'target'] as const;
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => row[column].length)));
  const line = (cells: readonly string[]): string => cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  console.log(line(columns));
  console.log(line(widths.map((width) => '-'.repeat(width))));
  for (const row of rows) console.log(line(columns.map((column) => row[column])));
}

async function main(): Promise<void> {
  const began = Date.now();
  const notes: string[] = [];
  const timed = async <T>(label: string, run: () => Promise<T>): Promise<T> => {
    const start = Date.now();
    process.stderr.write(`bench: ${label}…\n`);
    const result = await run();
    notes.push(`${label}: ${((Date.now() - start) / 1000).toFixed(1)} s`);
    await settle();
    return result;
  };
  // `npm run bench -- loop resume` runs only the cases named (loop, resume, nested, paused, store, restart, import, hibernate, durable,
  // durable-step, server-rss; no results.json).
  const only = process.argv.slice(2);
  const wanted = (name: string): boolean => only.length === 0 || only.includes(name);
  const loaded = await timed('compile', loadStepwiseLib);
  const { lib, stores } = loaded;
  notes.push(`measured: ${loaded.source}`);
  const entries: BenchEntry[] = [];
  const dataRoot = mkdtempSync(join(tmpdir(), 'stepwise-bench-'));
  try {
    const loopConfig = { sqlite: { stores, dataDir: join(dataRoot, 'loop') } };
    if (wanted('loop')) entries.push(...(await timed('loop', () => runLoopBenchmarks(lib, loopConfig))));
    if (wanted('resume')) entries.push(...(await timed('resume', () => runResumeBenchmarks(lib))));
    // A child run at depth 1 against the root doing the same (bench/nested.ts).
    if (wanted('nested')) entries.push(...(await timed('nested', async () => (await import('./nested.js')).runNestedBenchmarks(lib))));
    const withNotes = async (label: string, run: () => Promise<{ entries: BenchEntry[]; notes: string[] }>): Promise<void> => {
      if (!wanted(label)) return;
      const output = await timed(label, run);
      entries.push(...output.entries);
      notes.push(...output.notes);
    };
    await withNotes('paused', () => runPausedBenchmarks(lib));
    await withNotes('store', () => measureStoreAppend(stores, dataRoot));
    await withNotes('restart', () => runRestartBenchmarks(loaded, join(dataRoot, 'restart')));
    const root = fileURLToPath(new URL('..', import.meta.url));
    await withNotes('import', () => measureImportTime({ entryUrl: new URL('index.js', loaded.srcUrl).href, cwd: root }));
    // Paused runs hibernated to the store, at 100 000 (bench/hibernate.ts).
    await withNotes('hibernate', async () => (await import('./hibernate.js')).runHibernateBenchmarks(loaded, join(dataRoot, 'hibernate')));
    // A real `serve --store sqlite` process with 100 000 paused runs, its RSS read from outside (bench/server-rss.ts).
    // 1 000 concurrent runs, SQLite against the memory store (bench/durable-throughput.ts).
    await withNotes('durable', async () => (await import('./durable-throughput.js')).runDurableThroughputBenchmark(loaded, join(dataRoot, 'durable')));
    // A durable step against a hand-written durable loop, and whether it grows with the history (bench/durable-step.ts).
    await withNotes('durable-step', async () => (await import('./durable-step.js')).runDurableStepBenchmarks(loaded, join(dataRoot, 'durable-step')));
    await withNotes('server-rss', async () => (await import('./server-rss.js')).runServerRssBenchmark(loaded, join(dataRoot, 'server-rss')));
  } finally {
    rmSync(dataRoot, { recursive: true, force: true });
  }
  if (only.length > 0) {
    await report(entries, notes, began, false);
    return;
  }
  await report(entries, notes, began);

  // Written first without them, so a failing or hanging wire case never costs the library figures.
  try {
    const wire = await timed('wire', () => within(runWire(notes), WIRE_LIMIT_MS, 'the wire benchmarks'));
    entries.push(...wire);
  } catch (error) {
    notes.push(`wire: failed, skipped: ${error instanceof Error ? error.message : String(error)}`);
  }
  await report(entries, notes, began);

  // AG-UI's resume over the wire: the server in a worker thread, the client reading on its own loop (bench/agui.ts).
  try {
    const { runAgUiBenchmarks } = await import('./agui.js');
    entries.push(...(await timed('agui', () => within(runAgUiBenchmarks(), WIRE_LIMIT_MS, 'the AG-UI benchmarks'))));
  } catch (error) {
    notes.push(`agui: failed, skipped: ${error instanceof Error ? error.message : String(error)}`);
  }
  // A pause's signed POST to a receiver on 127.0.0.1 (bench/webhooks.ts).
  try {
    const { runWebhookBenchmarks } = await import('./webhooks.js');
    const webhooks = await timed('webhooks', () => within(runWebhookBenchmarks(), WIRE_LIMIT_MS, 'the webhook benchmarks'));
    entries.push(...webhooks.entries);
    notes.push(...webhooks.notes);
  } catch (error) {
    notes.push(`webhooks: failed, skipped: ${error instanceof Error ? error.message : String(error)}`);
  }
  await report(entries, notes, began);

  // Two real `serve` processes on a redis-server of its own (bench/cluster.ts); none installed: a note.
  try {
    const { runClusterBenchmarks } = await import('./cluster.js');
    const cluster = await timed('cluster', () => within(runClusterBenchmarks(), WIRE_LIMIT_MS, 'the cluster benchmarks'));
    entries.push(...cluster.entries);
    notes.push(...cluster.notes);
  } catch (error) {
    notes.push(`cluster: failed, skipped: ${error instanceof Error ? error.message : String(error)}`);
  }
  await report(entries, notes, began);
}

const WIRE_LIMIT_MS = 300_000;

async function report(entries: readonly BenchEntry[], notes: readonly string[], began: number, write = true): Promise<void> {
  printTable(entries);
  for (const note of notes) console.log(`note: ${note}`);
  console.log(`total: ${((Date.now() - began) / 1000).toFixed(1)} s\n`);
  if (write) await writeFile(new URL('./results.json', import.meta.url), `${JSON.stringify(entries, null, 2)}\n`);
}

await main();
// A wire case that timed out may still hold sockets or timers open.
process.exit(0);
