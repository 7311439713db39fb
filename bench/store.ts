import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom } from 'rxjs';
import type { StoredFrame } from '../src/core/store.js';
import type { StepwiseEvent } from '../src/streams/events.js';
import { createSqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { entry, type BenchEntry } from './bench-entry.js';
import { nowUs } from './scenario.js';

/**
 * The SQLite store (SPEC §5 `store_append`, and the store's share of `restart_recover`).
 *
 * `store_append`: frames/s committed durably (WAL, `synchronous = normal`: a committed batch survives
 * `kill -9`), written as the server writes them: the events of one tick (here 10 appends of 10
 * frames, one run's worth each, over 10 conversations) are queued and committed as one transaction,
 * and the next tick waits for that commit, as fan-out does. Frames are real hub events (deltas with
 * their cumulative text, tool calls, results), so JSON encoding is part of the figure.
 *
 * `store_recover_load`: ms to open a store holding `pausedRuns` paused runs (conversation, finished
 * turn, running turn, pause, checkpoint each) and `load()` all of it, as a restart does before it
 * can listen.
 */

export interface StoreBenchConfig {
  /** Frames appended for `store_append`. Default 200 000. */
  readonly frames?: number;
  /** Paused runs for `store_recover_load`. Default 10 000. */
  readonly pausedRuns?: number;
}

const DEFAULT_STORE_BENCH = Object.freeze({ frames: 200_000, pausedRuns: 10_000 });
const CONVERSATIONS = 10;
const APPENDS_PER_TICK = 10;

/** One run's events, cycling: deltas with a growing cumulative text, then a tool call and its result. */
function eventAt(convId: string, index: number): StepwiseEvent {
  const origin = { conv_id: convId, session_id: `sess_${convId}`, inference_id: 'inf_bench', turn_id: 'turn_bench', at: 1_700_000_000_000 + index };
  const step = index % 20;
  if (step < 16) {
    const cumulative = 'The weather in Paris is mild today, '.repeat(1 + (step >> 2));
    return { ...origin, type: 'text-delta', delta: 'mild today, ', cumulative };
  }
  if (step === 16) return { ...origin, type: 'tool-call-requested', tool_call_id: `call_${index}`, name: 'weather', args: { city: 'Paris', unit: 'C' } };
  if (step === 17) return { ...origin, type: 'tool-execution-started', tool_call_id: `call_${index - 1}`, name: 'weather', args: { city: 'Paris', unit: 'C' } };
  if (step === 18) return { ...origin, type: 'tool-result', tool_call_id: `call_${index - 2}`, name: 'weather', result: { temperature: 18, sky: 'clear' } };
  return { ...origin, type: 'tool-execution-finished', tool_call_id: `call_${index - 3}`, name: 'weather', duration_ms: 12 };
}

async function measureAppend(dataDir: string, total: number): Promise<number> {
  const store = createSqliteStore<StepwiseEvent>({ dataDir });
  // Events are made before the clock starts (the hub has them already); each append wraps its
  // frames with their seq, as the hub does.
  const cycle = Array.from({ length: CONVERSATIONS }, (_, conv) => Array.from({ length: 20 }, (_, index) => eventAt(`conv_${conv}`, index)));
  const seqs = new Array<number>(CONVERSATIONS).fill(0);
  const perAppend = 10;
  const batch = (conv: number): StoredFrame<StepwiseEvent>[] => {
    const events = cycle[conv] as StepwiseEvent[];
    return Array.from({ length: perAppend }, () => {
      const seq = (seqs[conv] = (seqs[conv] ?? 0) + 1);
      return { seq, event: events[seq % events.length] as StepwiseEvent };
    });
  };
  const started = nowUs();
  let written = 0;
  while (written < total) {
    let committed$ = store.appendFrames([]);
    for (let i = 0; i < APPENDS_PER_TICK; i += 1) committed$ = store.appendFrames(batch(i % CONVERSATIONS));
    written += APPENDS_PER_TICK * perAppend;
    await lastValueFrom(committed$, { defaultValue: undefined });
  }
  const seconds = (nowUs() - started) / 1e6;
  await store.close();
  return written / seconds;
}

async function measureRecoverLoad(dataDir: string, runs: number): Promise<number> {
  const seed = createSqliteStore({ dataDir });
  for (let i = 0; i < runs; i += 1) {
    const conv_id = `conv_${i}`;
    const session_id = `sess_${i}`;
    const user = { id: `u_${i}`, kind: 'user', role: 'user', payload: { text: 'What is the weather in Paris?' } } as const;
    const call = { id: `c_${i}`, kind: 'tool_call', role: 'assistant', payload: { id: `call_${i}`, name: 'weather', args: { city: 'Paris' } } } as const;
    seed.putConversation({ conv_id, session_id, created_at: 1_700_000_000_000 + i, step: { enabled: true } });
    seed.putTurn(conv_id, { id: `t0_${i}`, blocks: [user, { id: `x_${i}`, kind: 'llm_text', role: 'assistant', payload: { text: 'Mild.' } }] });
    seed.putTurn(conv_id, { id: `t1_${i}`, blocks: [user, call] });
    const origin = { conv_id, session_id, inference_id: `inf_${i}`, turn_id: `t1_${i}` };
    seed.putPause({ ...origin, pause_id: `pause_${i}`, phase: 'after_inference', summary: '1 tool call pending: weather', deadline_ms: 1_700_000_030_000, tool_calls: [{ id: `call_${i}`, name: 'weather', input: { city: 'Paris' } }] });
    seed.putCheckpoint({ ...origin, next: 'after_inference', iteration: 1, blocks: [user, call], pause_id: `pause_${i}`, at_ms: 1_700_000_000_000 });
  }
  await seed.close();
  const started = nowUs();
  const store = createSqliteStore({ dataDir });
  const snapshot = await store.load();
  const ms = (nowUs() - started) / 1000;
  if (snapshot.pauses.length !== runs) throw new Error(`store bench: loaded ${snapshot.pauses.length} of ${runs} pauses`);
  await store.close();
  return ms;
}

export async function runStoreBenchmarks(config: StoreBenchConfig = {}): Promise<BenchEntry[]> {
  const { frames, pausedRuns } = { ...DEFAULT_STORE_BENCH, ...config };
  const root = mkdtempSync(join(tmpdir(), 'stepwise-bench-store-'));
  try {
    const appendRate = await measureAppend(join(root, 'append'), frames);
    const loadMs = await measureRecoverLoad(join(root, 'recover'), pausedRuns);
    return [entry('store_append', appendRate, 'frames/s'), entry('store_recover_load', loadMs, 'ms')];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
