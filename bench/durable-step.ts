import { join } from 'node:path';
import { z } from 'zod';
import type { Store } from '../src/core/store.js';
import type { Engine, Tool } from '../src/index.js';
import { entry, median, type BenchEntry } from './bench-entry.js';
import { createDurableBaseline, type DurableBaseline } from './durable-baseline.js';
import type { LoadedLib, StepwiseLib } from './lib.js';
import { createAsyncEchoTool, createStepEngine, nowUs, settle, within } from './scenario.js';

/**
 * A durable step as a library user runs it (README.md, Benchmarks):
 * - `durable_step_limit`: µs per step of `steps`-step runs (10), `createStepwise` on a SQLite store (one
 *   for every sample, as a program has), each run in a new session opened inside the timed span, a
 *   zod-validated async tool that is not idempotent; each sample is timed until the store committed
 *   all. Baseline: the best a hand-written durable loop does (durable-baseline.ts), on a file of its own.
 * - `durable_step_limit_idempotent`: the same with the tool declared idempotent on both sides.
 * - `durable_step_flat`: a step's durable cost, µs per step of one `longSteps`-step run (1 000) on SQLite
 *   minus the same on the memory store, over its last `window` steps (10); baseline: the same over its
 *   first ones. Each step is timed from its inference's start to the next one's; the figures are medians
 *   over rounds of each round's difference.
 * Sampled in interleaved rounds after a warm-up, as bench/loop.ts does; the figures are medians.
 */

export interface DurableStepConfig {
  readonly steps?: number;
  readonly runsPerSample?: number;
  readonly rounds?: number;
  readonly warmupRounds?: number;
  readonly longSteps?: number;
  readonly window?: number;
  readonly longRounds?: number;
  /** Samplers of the limit figures to run (`effects`, `effectsBaseline`, `idempotent`, `idempotentBaseline`), or `flat`; all by default. To profile one. */
  readonly only?: readonly string[];
}

const DEFAULT_DURABLE_STEP = Object.freeze({ steps: 10, runsPerSample: 4, rounds: 200, warmupRounds: 30, longSteps: 1000, window: 10, longRounds: 21 });

type Sampler = (round: number) => Promise<number>;

/** The realistic tool declared idempotent: a store may run it again after a crash, so nothing is committed before it runs. */
function createAsyncIdempotentEchoTool(lib: StepwiseLib): Tool {
  return lib.defineTool({
    name: 'echo',
    description: 'Echoes the text back, asynchronously.',
    parameters: z.object({ text: z.string() }),
    idempotent: true,
    execute: async ({ text }) => ({ text }),
  });
}

function stepwiseSampler(lib: StepwiseLib, store: Store, tool: Tool, steps: number, runs: number): Sampler {
  return async () => {
    const sw = lib.createStepwise({ engine: createStepEngine(lib, steps), tools: [tool], maxIterations: steps + 10, store });
    const timeRuns = async (): Promise<number> => {
      const started = nowUs();
      for (let i = 0; i < runs; i += 1) {
        const result = await sw.sessions.open().start({ prompt: 'go' }).result();
        if (result.status !== 'completed') throw new Error(`durable step bench: a run ended ${result.status}: ${result.error ?? ''}`);
      }
      await sw.store.flush();
      return nowUs() - started;
    };
    const elapsed = await within(timeRuns(), 10_000, 'a durable step sample');
    sw.dispose();
    return elapsed / (runs * steps);
  };
}

function baselineSampler(lib: StepwiseLib, baseline: DurableBaseline, tool: Tool, steps: number, runs: number): Sampler {
  return async (round) => {
    const engine = createStepEngine(lib, steps);
    const started = nowUs();
    for (let i = 0; i < runs; i += 1) {
      const inferences = await baseline.run(engine, tool, `c${round}_${i}`, steps + 10);
      if (inferences !== steps + 1) throw new Error(`durable step bench: the baseline ran ${inferences} inferences, expected ${steps + 1}`);
    }
    return (nowUs() - started) / (runs * steps);
  };
}

async function sampleInterleaved(samplers: Readonly<Record<string, Sampler>>, rounds: number, warmupRounds: number): Promise<Record<string, number>> {
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(samplers).map((name) => [name, []]));
  for (let round = 0; round < warmupRounds + rounds; round += 1) {
    for (const [name, sampler] of Object.entries(samplers)) {
      const perStep = await sampler(round);
      if (round >= warmupRounds) samples[name]?.push(perStep);
      await settle();
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)]));
}

/** The engine, with the time each inference starts. */
function marked(engine: Engine, marks: number[]): Engine {
  return { ...engine, infer: (request) => (marks.push(nowUs()), engine.infer(request)) };
}

/** One long run on `store`: µs per step over its first and its last `window` steps. */
async function longRun(lib: StepwiseLib, store: Store, tool: Tool, steps: number, window: number): Promise<{ early: number; late: number }> {
  const marks: number[] = [];
  const sw = lib.createStepwise({ engine: marked(createStepEngine(lib, steps), marks), tools: [tool], maxIterations: steps + 10, store });
  const result = await within(sw.sessions.open().start({ prompt: 'go' }).result(), 120_000, 'a long durable run');
  await sw.store.flush();
  sw.dispose();
  if (result.status !== 'completed' || marks.length !== steps + 1) throw new Error(`durable step bench: a long run ended ${result.status} after ${marks.length} inferences`);
  const span = (from: number): number => ((marks[from + window] ?? NaN) - (marks[from] ?? NaN)) / window;
  return { early: span(0), late: span(steps - window) };
}

/**
 * The durable cost of a step is taken per round, from a memory-store run and a SQLite run made one after
 * the other, so that what the host does meanwhile hits both sides of each difference alike.
 */
async function measureFlat(lib: StepwiseLib, sqlite: Store, tool: Tool, config: { readonly longSteps: number; readonly window: number; readonly longRounds: number }): Promise<{ entry: BenchEntry; note: string }> {
  const { longSteps, window, longRounds } = config;
  const samples = { early: [] as number[], late: [] as number[], sqliteEarly: [] as number[], sqliteLate: [] as number[], memoryEarly: [] as number[], memoryLate: [] as number[] };
  for (let round = 0; round < longRounds + 2; round += 1) {
    const memory = await longRun(lib, lib.createMemoryStore(), tool, longSteps, window);
    await settle();
    const durable = await longRun(lib, sqlite, tool, longSteps, window);
    await settle();
    if (round < 2) continue;
    samples.early.push(durable.early - memory.early);
    samples.late.push(durable.late - memory.late);
    samples.memoryEarly.push(memory.early);
    samples.memoryLate.push(memory.late);
    samples.sqliteEarly.push(durable.early);
    samples.sqliteLate.push(durable.late);
  }
  const fixed = (values: number[]): string => median(values).toFixed(2);
  return {
    entry: entry('durable_step_flat', median(samples.late), 'µs', median(samples.early)),
    note:
      `durable_step_flat: ${longSteps}-step runs, µs per step over steps 1-${window} / ${longSteps - window + 1}-${longSteps}: ` +
      `SQLite ${fixed(samples.sqliteEarly)} / ${fixed(samples.sqliteLate)}, memory ${fixed(samples.memoryEarly)} / ${fixed(samples.memoryLate)}`,
  };
}

export async function runDurableStepBenchmarks(loaded: LoadedLib, dataRoot: string, config: DurableStepConfig = {}): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  const resolved = { ...DEFAULT_DURABLE_STEP, ...config };
  const { lib } = loaded;
  const { steps, runsPerSample: runs } = resolved;
  const wanted = (name: string): boolean => config.only === undefined || config.only.includes(name);
  const tool = createAsyncEchoTool(lib);
  const idempotentTool = createAsyncIdempotentEchoTool(lib);
  const store = loaded.stores.createSqliteStore({ dataDir: join(dataRoot, 'stepwise') });
  const effectsBaseline = createDurableBaseline(join(dataRoot, 'effects'), false);
  const idempotentBaseline = createDurableBaseline(join(dataRoot, 'idempotent'), true);
  try {
    const samplers: Record<string, Sampler> = {
      effects: stepwiseSampler(lib, store, tool, steps, runs),
      effectsBaseline: baselineSampler(lib, effectsBaseline, tool, steps, runs),
      idempotent: stepwiseSampler(lib, store, idempotentTool, steps, runs),
      idempotentBaseline: baselineSampler(lib, idempotentBaseline, idempotentTool, steps, runs),
    };
    const chosen = Object.fromEntries(Object.entries(samplers).filter(([name]) => wanted(name)));
    const figures = await sampleInterleaved(chosen, resolved.rounds, resolved.warmupRounds);
    const entries = [
      ...(figures['effects'] === undefined ? [] : [entry('durable_step_limit', figures['effects'], 'µs', figures['effectsBaseline'])]),
      ...(figures['idempotent'] === undefined ? [] : [entry('durable_step_limit_idempotent', figures['idempotent'], 'µs', figures['idempotentBaseline'])]),
    ];
    const notes: string[] = [];
    if (wanted('flat')) {
      const flat = await measureFlat(lib, store, tool, resolved);
      entries.push(flat.entry);
      notes.push(flat.note);
    }
    return { entries, notes };
  } finally {
    effectsBaseline.close();
    idempotentBaseline.close();
    await store.close();
  }
}
