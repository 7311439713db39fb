import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { z } from 'zod';
import type { Engine, Script, Tool } from '../src/index.js';
import type { StepwiseLib } from './lib.js';

/**
 * What every benchmark runs: one scripted engine port and one tool, shared by stepwise and the
 * baselines so the only difference measured is the loop around them.
 */

/** The one tool: echoes its input. Synchronous, so the loop's own overhead is what shows. */
export function createEchoTool(lib: StepwiseLib): Tool {
  return lib.defineTool({
    name: 'echo',
    description: 'Echoes the text back.',
    parameters: z.object({ text: z.string() }),
    execute: ({ text }) => ({ text }),
  });
}

/**
 * The echo tool declared idempotent: what a durable store lets run again after a crash, so a run does
 * not wait for its checkpoint to be committed before it runs it (docs/protocol.md, Durability).
 */
export function createIdempotentEchoTool(lib: StepwiseLib): Tool {
  return lib.defineTool({
    name: 'echo',
    description: 'Echoes the text back.',
    parameters: z.object({ text: z.string() }),
    idempotent: true,
    execute: ({ text }) => ({ text }),
  });
}

/** The realistic tool: the same zod schema, answering with a Promise as most real tools do. */
export function createAsyncEchoTool(lib: StepwiseLib): Tool {
  return lib.defineTool({
    name: 'echo',
    description: 'Echoes the text back, asynchronously.',
    parameters: z.object({ text: z.string() }),
    execute: async ({ text }) => ({ text }),
  });
}

/**
 * A script of `steps` answers that each ask for one echo call, then a final text.
 * The scripted engine keeps one cursor per conversation, so each run needs its own conv_id.
 */
export function createStepScript(steps: number, delayMs = 0): Script {
  const call = { tool_calls: [{ name: 'echo', arguments: { text: 'x' } }], ...(delayMs > 0 ? { delay_ms: delayMs } : {}) };
  return { responses: [...Array.from({ length: steps }, () => call), { text: 'done' }] };
}

export function createStepEngine(lib: StepwiseLib, steps: number): Engine {
  return lib.createScriptedEngine(createStepScript(steps));
}

/** Wall-clock microseconds, monotonic. */
export const nowUs = (): number => performance.now() * 1000;

/** Lets pending timers and I/O run between phases, so one case's leftovers never land in another's timing. */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Fails loudly when a run never ends: a stalled run leaves nothing on the event loop, so an
 * unguarded `await` would let the process exit 0 mid-bench with no figures.
 */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`bench: ${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/**
 * A full collection. `npm run bench` runs without `--expose-gc` (package.json is not ours to
 * change), so the flag is switched on at run time and `gc` fetched from a fresh context, which
 * V8 then creates with it.
 */
export function collectGarbage(): void {
  if (typeof globalThis.gc !== 'function') {
    setFlagsFromString('--expose-gc');
    globalThis.gc = runInNewContext('gc') as typeof globalThis.gc;
  }
  globalThis.gc?.();
  globalThis.gc?.();
}

/** Heap in use after a full collection, in bytes. */
export function settledHeap(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}
