import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Observable } from 'rxjs';
import type { Store } from '../src/core/store.js';
import type { Engine, EngineEvent, InferenceRequest, Tool } from '../src/index.js';
import { entry, median, type BenchEntry } from './bench-entry.js';
import type { LoadedLib } from './lib.js';
import { createEchoTool, createIdempotentEchoTool, nowUs, settle, within } from './scenario.js';

/**
 * `durable_throughput` (ratio): steps/s of `runs` (1 000) concurrent runs of `steps` (10) inferences each,
 * every inference but the last asking for one echo call, step mode off, on the SQLite store; baseline:
 * the same on the memory store, sampled in alternating rounds of the same process. The engine answers
 * on the next macrotask (`setImmediate`), as a provider's answer arrives from I/O, so the runs
 * interleave as a server's do and the store's batches fill from all of them. The echo tool is not
 * declared idempotent, as a tool with effects is (its checkpoint is committed before it runs);
 * `durable_throughput_idempotent` beside it runs the echo tool declared idempotent.
 * Each sample is timed from the first `start` until every run ended and the store committed all.
 */
export interface DurableThroughputConfig {
  readonly runs?: number;
  readonly steps?: number;
  readonly rounds?: number;
  readonly warmupRounds?: number;
}

const DEFAULT_DURABLE_THROUGHPUT = Object.freeze({ runs: 1000, steps: 10, rounds: 5, warmupRounds: 1 });

/**
 * Stateless (as a provider is, so no engine state is stored): the run's inference n (from its message
 * id) asks for a tool until the last, and every answer comes on the next macrotask.
 */
function createMacrotaskEngine(steps: number): Engine {
  const answer = (request: InferenceRequest): EngineEvent[] => {
    const n = Number(request.message_id?.split(':')[1] ?? 1);
    const finished: EngineEvent = { type: 'finished', model: 'macrotask', usage: { input_tokens: 1, output_tokens: 1 }, stop_reason: n < steps ? 'tool_use' : 'end_turn' };
    if (n >= steps) return [{ type: 'text-delta', delta: 'done' }, finished];
    return [{ type: 'tool-call', id: `call_${n}`, name: 'echo', args: { text: 'x' } }, finished];
  };
  return {
    name: 'macrotask',
    model: 'macrotask',
    infer: (request) =>
      new Observable<EngineEvent>((subscriber) => {
        const handle = setImmediate(() => {
          for (const event of answer(request)) subscriber.next(event);
          subscriber.complete();
        });
        return () => clearImmediate(handle);
      }),
  };
}

/** One sample: steps/s of `runs` concurrent runs on `store`. */
export async function sample(loaded: LoadedLib, store: Store, tool: Tool, runs: number, steps: number): Promise<number> {
  const sw = loaded.lib.createStepwise({ engine: createMacrotaskEngine(steps), tools: [tool], maxIterations: steps + 5, store, retention: { maxSessions: runs + 10 } });
  const sessions = Array.from({ length: runs }, () => sw.sessions.open());
  await sw.store.flush();
  const started = nowUs();
  const results = await within(Promise.all(sessions.map((session) => session.start({ prompt: 'go' }).result())), 120_000, 'a durable throughput sample');
  await sw.store.flush();
  const elapsed = (nowUs() - started) / 1e6;
  const failed = results.find((result) => result.status !== 'completed');
  if (failed) throw new Error(`durable throughput bench: a run ended ${failed.status}: ${failed.error ?? ''}`);
  sw.dispose();
  await settle();
  return (runs * steps) / elapsed;
}

async function measure(loaded: LoadedLib, dataDir: string, tool: Tool, config: Required<DurableThroughputConfig>): Promise<{ sqlite: number[]; memory: number[] }> {
  const { runs, steps, rounds, warmupRounds } = config;
  mkdirSync(dataDir, { recursive: true });
  const sqliteStore = loaded.stores.createSqliteStore({ dataDir });
  const samples = { sqlite: [] as number[], memory: [] as number[] };
  try {
    for (let round = 0; round < warmupRounds + rounds; round += 1) {
      // A memory store per sample, as a runtime without one gets; the SQLite store is shared, as a server's is.
      const memory = await sample(loaded, loaded.lib.createMemoryStore(), tool, runs, steps);
      const sqlite = await sample(loaded, sqliteStore, tool, runs, steps);
      if (round < warmupRounds) continue;
      samples.memory.push(memory);
      samples.sqlite.push(sqlite);
    }
  } finally {
    await sqliteStore.close();
  }
  return samples;
}

export async function runDurableThroughputBenchmark(loaded: LoadedLib, dataRoot: string, config: DurableThroughputConfig = {}): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  const resolved = { ...DEFAULT_DURABLE_THROUGHPUT, ...config };
  const effects = await measure(loaded, join(dataRoot, 'effects'), createEchoTool(loaded.lib), resolved);
  const idempotent = await measure(loaded, join(dataRoot, 'idempotent'), createIdempotentEchoTool(loaded.lib), resolved);
  const round = (values: number[]): string => values.map((v) => Math.round(v)).join(', ');
  return {
    entries: [
      entry('durable_throughput', median(effects.sqlite), 'steps/s', median(effects.memory)),
      entry('durable_throughput_idempotent', median(idempotent.sqlite), 'steps/s', median(idempotent.memory)),
    ],
    notes: [
      `durable_throughput: ${resolved.runs} concurrent ${resolved.steps}-step runs; SQLite ${round(effects.sqlite)} steps/s, memory ${round(effects.memory)}; ` +
        `idempotent tool: SQLite ${round(idempotent.sqlite)}, memory ${round(idempotent.memory)}`,
    ],
  };
}
