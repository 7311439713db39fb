import { lastValueFrom } from 'rxjs';
import type { Store } from '../src/core/store.js';
import type { Engine, Tool } from '../src/index.js';
import { entry, median, type BenchEntry } from './bench-entry.js';
import { runBareRxLoop, runBareRxLoopAsync, runPlainLoop } from './baselines.js';
import type { StepwiseLib, StoreLib } from './lib.js';
import { createAsyncEchoTool, createEchoTool, createIdempotentEchoTool, createStepEngine, nowUs, settle, within } from './scenario.js';

/**
 * Loop overhead per step (README.md, Benchmarks), one inference and one tool call per step, step mode off, every
 * event published to the hub with one subscriber:
 * - `loop_step`, `loop_step_plain`: the best case, a synchronous echo tool without async work,
 *   against a bare RxJS `expand` loop and a plain async/await loop over the same engine and tool.
 * - `loop_step_realistic`: what a user's loop looks like, 10-step runs each in a new session
 *   (conversation, opened inside the timed span), a zod-validated tool that answers with a Promise;
 *   against the bare RxJS loop doing the same zod parse and the same awaited call.
 * - `loop_step_sqlite` (when given a data dir): `loop_step`'s runs with the runtime given a SQLite
 *   store on a file there (one store for every sample, as a server has), against `loop_step` with the
 *   memory store in the same rounds. The runtime queues its writes (turns, checkpoints, engine state
 *   at each phase boundary, frames) and they commit in a batch; each sample is timed until they have
 *   (`store.flush()`, for both stores), so the commits' cost is in the figure. Its echo tool is
 *   declared idempotent, so this is the loop's own overhead on a durable store.
 * - `loop_step_sqlite_effects`: the same with the echo tool not declared idempotent, as a tool with
 *   effects is: before each tools phase the checkpoint naming the call as running is committed (a
 *   transaction per step), so that a crash never runs it twice (docs/protocol.md, Durability).
 *
 * A zero-delay script runs synchronously; the bare RxJS baseline's `expand` recurses per step and
 * would overflow the stack on long runs (stepwise trampolines its phases), so each run is kept to
 * `steps` (15) steps; each sample is `runsPerSample` runs, each in a fresh conversation so the
 * script starts over. The loops are sampled in interleaved rounds (stepwise, rx, plain, stepwise, …)
 * after a warm-up, so drift and GC hit all alike; the figures are medians of per-sample µs/step.
 */

export interface LoopBenchConfig {
  readonly steps?: number;
  /** Steps per run of the realistic case. */
  readonly realisticSteps?: number;
  readonly runsPerSample?: number;
  readonly rounds?: number;
  readonly warmupRounds?: number;
  /** Samplers to run (`stepwise`, `rx`, `plain`, `realistic`, `realisticRx`, `sqlite`, `sqliteEffects`); all by default. To profile one. */
  readonly only?: readonly string[];
  /** For `loop_step_sqlite`: the SQLite adapter and a dir for its file. Without it the case is skipped. */
  readonly sqlite?: { readonly stores: StoreLib; readonly dataDir: string };
}

const DEFAULT_LOOP_BENCH = Object.freeze({ steps: 15, realisticSteps: 10, runsPerSample: 4, rounds: 300, warmupRounds: 40 });

type Sampler = (round: number) => Promise<number>;
interface SamplerRuntime {
  readonly store?: Store;
  readonly tracer?: null;
}
type Loop = (engine: Engine, tool: Tool, convId: string, max: number) => Promise<number>;

/**
 * stepwise: a fresh runtime per sample (built outside the timed span) so hub buffers and sessions
 * of earlier samples do not pile up; timed from `start()` to the awaited result and the store's
 * commit of what the runs wrote. With `openInSpan`, each run's session is opened inside the timed
 * span too. `runtime.store`: the runtime's store (default a memory store per runtime);
 * `runtime.tracer: null`: no tracing subscription at all (the default traces to OpenTelemetry's no-op).
 */
function stepwiseSampler(lib: StepwiseLib, tool: Tool, steps: number, runs: number, openInSpan = false, runtime: SamplerRuntime = {}): Sampler {
  return async () => {
    const sw = lib.createStepwise({ engine: createStepEngine(lib, steps), tools: [tool], maxIterations: steps + 10, ...runtime });
    let delivered = 0;
    const subscription = sw.hub.events$.subscribe(() => {
      delivered += 1;
    });
    const opened = openInSpan ? [] : Array.from({ length: runs }, () => sw.sessions.open());
    const timeRuns = async (): Promise<number> => {
      const started = nowUs();
      for (let i = 0; i < runs; i += 1) {
        const session = opened[i] ?? sw.sessions.open();
        const result = await session.start({ prompt: 'go' }).result();
        if (result.status !== 'completed') throw new Error(`loop bench: stepwise run ended ${result.status}: ${result.error ?? ''}`);
      }
      await sw.store.flush();
      return nowUs() - started;
    };
    // The guard's one timer is set before and cleared after the timed span.
    const elapsed = await within(timeRuns(), 10_000, 'a stepwise sample');
    if (delivered === 0) throw new Error('loop bench: no event reached the hub subscriber');
    subscription.unsubscribe();
    sw.dispose();
    return elapsed / (runs * steps);
  };
}

function baselineSampler(lib: StepwiseLib, tool: Tool, steps: number, runs: number, loop: Loop): Sampler {
  return async (round) => {
    const engine = createStepEngine(lib, steps);
    const started = nowUs();
    for (let i = 0; i < runs; i += 1) {
      const inferences = await loop(engine, tool, `c${round}_${i}`, steps + 10);
      if (inferences !== steps + 1) throw new Error(`loop bench: a baseline ran ${inferences} inferences, expected ${steps + 1}`);
    }
    return (nowUs() - started) / (runs * steps);
  };
}

/** Samples every sampler in interleaved rounds; returns the median µs/step of each. */
async function sampleInterleaved<K extends string>(samplers: Readonly<Record<K, Sampler>>, rounds: number, warmupRounds: number): Promise<Record<K, number>> {
  const names = Object.keys(samplers) as K[];
  const samples = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<K, number[]>;
  for (let round = 0; round < warmupRounds + rounds; round += 1) {
    for (const name of names) {
      const perStep = await samplers[name](round);
      if (round >= warmupRounds) samples[name].push(perStep);
      // Timers the runs left (tool timeouts are cleared, but keep phases clean) run here, untimed.
      await settle();
    }
  }
  return Object.fromEntries(names.map((name) => [name, median(samples[name])])) as Record<K, number>;
}

export async function runLoopBenchmarks(lib: StepwiseLib, config: LoopBenchConfig = {}): Promise<BenchEntry[]> {
  const { steps, realisticSteps, runsPerSample, rounds, warmupRounds } = { ...DEFAULT_LOOP_BENCH, ...config };
  const tool = createEchoTool(lib);
  const idempotentTool = createIdempotentEchoTool(lib);
  const asyncTool = createAsyncEchoTool(lib);
  const sqlite = config.sqlite?.stores.createSqliteStore({ dataDir: config.sqlite.dataDir });
  try {
    return await sampleLoops(lib, { steps, realisticSteps, runsPerSample, rounds, warmupRounds, tool, idempotentTool, asyncTool, sqlite, only: config.only });
  } finally {
    await sqlite?.close();
  }
}

interface LoopCases {
  readonly steps: number;
  readonly realisticSteps: number;
  readonly runsPerSample: number;
  readonly rounds: number;
  readonly warmupRounds: number;
  readonly tool: Tool;
  readonly idempotentTool: Tool;
  readonly asyncTool: Tool;
  readonly sqlite: Store | undefined;
  readonly only: readonly string[] | undefined;
}

async function sampleLoops(lib: StepwiseLib, cases: LoopCases): Promise<BenchEntry[]> {
  const { steps, realisticSteps, runsPerSample, rounds, warmupRounds, tool, idempotentTool, asyncTool, sqlite, only } = cases;
  const samplers = {
    stepwise: stepwiseSampler(lib, tool, steps, runsPerSample),
    rx: baselineSampler(lib, tool, steps, runsPerSample, (engine, t, convId, max) => lastValueFrom(runBareRxLoop(engine, t, convId, max))),
    plain: baselineSampler(lib, tool, steps, runsPerSample, runPlainLoop),
    realistic: stepwiseSampler(lib, asyncTool, realisticSteps, runsPerSample, true),
    realisticRx: baselineSampler(lib, asyncTool, realisticSteps, runsPerSample, (engine, t, convId, max) =>
      lastValueFrom(runBareRxLoopAsync(engine, t, convId, max)),
    ),
    ...(sqlite
      ? {
          sqlite: stepwiseSampler(lib, idempotentTool, steps, runsPerSample, false, { store: sqlite }),
          sqliteEffects: stepwiseSampler(lib, tool, steps, runsPerSample, false, { store: sqlite }),
        }
      : {}),
    untraced: stepwiseSampler(lib, tool, steps, runsPerSample, false, { tracer: null }),
  };
  const chosen = Object.fromEntries(Object.entries(samplers).filter(([name]) => !only || only.includes(name))) as Record<string, Sampler>;
  const figures: Partial<Record<keyof typeof samplers, number>> = await sampleInterleaved(chosen, rounds, warmupRounds);
  if (only) return Object.entries(figures).map(([name, value]) => entry(name, value, 'µs'));
  const { stepwise = NaN, rx, plain, realistic = NaN, realisticRx, untraced } = figures;
  return [
    entry('loop_step', stepwise, 'µs', rx),
    entry('loop_step_plain', stepwise, 'µs', plain),
    entry('loop_step_realistic', realistic, 'µs', realisticRx),
    ...(figures.sqlite === undefined ? [] : [entry('loop_step_sqlite', figures.sqlite, 'µs', stepwise)]),
    ...(figures.sqliteEffects === undefined ? [] : [entry('loop_step_sqlite_effects', figures.sqliteEffects, 'µs', stepwise)]),
    // Issue 13: tracing to OpenTelemetry's no-op (no SDK registered) against no tracing at all.
    entry('loop_step_otel_noop', stepwise, 'µs', untraced),
  ];
}
