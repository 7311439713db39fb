import { lastValueFrom, Observable } from 'rxjs';
import type { Engine, Tool } from '../src/index.js';
import { runBareRxLoop, runBareRxLoopAsync } from './baselines.js';
import type { StepwiseLib } from './lib.js';
import { collectGarbage, createAsyncEchoTool, createEchoTool, createStepEngine } from './scenario.js';

/**
 * Counts that do not depend on the machine's load (STYLE.md: find the cost before changing anything
 * for speed): RxJS subscriptions per step and bytes allocated per step, for stepwise's loop and the
 * bare RxJS loop over the same engine and tool, in the best case (`loop_step`) and the realistic one.
 * Bytes are the heap's growth across a batch between collections, so run it with a young generation
 * large enough to hold a batch: `node --max-semi-space-size=256 --import tsx bench/profile.ts count`.
 */

interface Counted {
  readonly subscriptionsPerStep: number;
  readonly bytesPerStep: number;
}

/** Runs `runs` runs of `steps` steps; one engine per batch (its cursors are per conversation). */
type RunBatch = (engine: Engine, runs: number, tag: string) => Promise<void>;

function countSubscriptions(): { read: () => number; restore: () => void } {
  const original = Observable.prototype.subscribe;
  let count = 0;
  Observable.prototype.subscribe = function counted(this: Observable<unknown>, ...args: unknown[]) {
    count += 1;
    return (original as (...a: unknown[]) => ReturnType<typeof original>).apply(this, args);
  } as typeof original;
  return { read: () => count, restore: () => (Observable.prototype.subscribe = original) };
}

async function measure(lib: StepwiseLib, steps: number, runs: number, runBatch: RunBatch): Promise<Counted> {
  // Warm-up, so compiled code and lazily built tables are not counted.
  for (let i = 0; i < 20; i += 1) await runBatch(createStepEngine(lib, steps), runs, `w${i}`);
  const engine = createStepEngine(lib, steps);
  collectGarbage();
  const counter = countSubscriptions();
  const before = process.memoryUsage().heapUsed;
  await runBatch(engine, runs, 'r');
  const bytes = process.memoryUsage().heapUsed - before;
  counter.restore();
  return { subscriptionsPerStep: counter.read() / (runs * steps), bytesPerStep: bytes / (runs * steps) };
}

/** One runtime per batch, as one bench sample has, its runs each in a new session. */
function stepwiseBatch(lib: StepwiseLib, tool: Tool, steps: number, tracer?: null): RunBatch {
  return async (engine, runs) => {
    const sw = lib.createStepwise({ engine, tools: [tool], maxIterations: steps + 10, ...(tracer === null ? { tracer } : {}) });
    const subscription = sw.hub.events$.subscribe(() => undefined);
    for (let i = 0; i < runs; i += 1) {
      const result = await sw.sessions.open().start({ prompt: 'go' }).result();
      if (result.status !== 'completed') throw new Error(`count: run ended ${result.status}: ${result.error ?? ''}`);
    }
    await sw.store.flush();
    subscription.unsubscribe();
    sw.dispose();
  };
}

const rxBatch =
  (loop: typeof runBareRxLoop, tool: Tool, steps: number): RunBatch =>
  async (engine, runs, tag) => {
    for (let i = 0; i < runs; i += 1) await lastValueFrom(loop(engine, tool, `${tag}${i}`, steps + 10));
  };

export async function runCounts(lib: StepwiseLib, runs = 20): Promise<Record<string, Counted>> {
  const tool = createEchoTool(lib);
  const asyncTool = createAsyncEchoTool(lib);
  const steps = 15;
  const realisticSteps = 10;
  return {
    stepwise: await measure(lib, steps, runs, stepwiseBatch(lib, tool, steps)),
    untraced: await measure(lib, steps, runs, stepwiseBatch(lib, tool, steps, null)),
    rx: await measure(lib, steps, runs, rxBatch(runBareRxLoop, tool, steps)),
    realistic: await measure(lib, realisticSteps, runs, stepwiseBatch(lib, asyncTool, realisticSteps)),
    realisticRx: await measure(lib, realisticSteps, runs, rxBatch(runBareRxLoopAsync, asyncTool, realisticSteps)),
  };
}
