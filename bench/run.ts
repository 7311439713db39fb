import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { BenchEntry } from './bench-entry.js';
import { loadStepwiseLib } from './lib.js';
import { runLoopBenchmarks } from './loop.js';
import { runPausedBenchmarks } from './paused.js';
import { runResumeBenchmarks } from './resume.js';
import { settle, within } from './scenario.js';

/**
 * `npm run bench` (SPEC §5): runs every case, prints a table and writes bench/results.json as
 * `[{name, value, unit, baseline?, ratio?}]`. The targets are issue 9's; they are printed, not
 * enforced, because figures on a shared machine are evidence, not tests.
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
  // `npm run bench -- loop resume` runs only the cases named (and writes no results.json).
  const only = process.argv.slice(2);
  const wanted = (name: string): boolean => only.length === 0 || only.includes(name);
  const { lib, source } = await timed('compile', loadStepwiseLib);
  notes.push(`measured: ${source}`);
  const entries: BenchEntry[] = [];
  if (wanted('loop')) entries.push(...(await timed('loop', () => runLoopBenchmarks(lib))));
  if (wanted('resume')) entries.push(...(await timed('resume', () => runResumeBenchmarks(lib))));
  if (wanted('paused')) {
    const paused = await timed('paused', () => runPausedBenchmarks(lib));
    entries.push(...paused.entries);
    notes.push(...paused.notes);
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
