import { join } from 'node:path';
import Database from 'better-sqlite3';
import { lastValueFrom, type Observable } from 'rxjs';
import type { StoredFrame } from '../src/core/store.js';
import type { StepwiseEvent } from '../src/streams/events.js';
import { entry, median, type BenchEntry } from './bench-entry.js';
import type { StoreLib } from './lib.js';
import { nowUs, settle } from './scenario.js';

/**
 * `store_append` (README.md, Benchmarks): frames/s committed durably to SQLite (a real file, WAL, `synchronous =
 * normal`: a committed batch survives `kill -9`), written as the server writes them: the server's
 * commit queue (src/streams/commit-queue.ts) calls `appendFrames([frame])` once per hub frame, so one tick's
 * frames (here 100, from 10 conversations) arrive as 100 single-frame appends, are queued and
 * committed as one transaction, and the next tick starts once that commit completed, as fan-out
 * waits for it. Frames are real hub events (deltas with their cumulative text, tool calls, results),
 * so JSON encoding is part of the figure.
 *
 * Baseline: raw better-sqlite3 writing the same rows (one JSON chunk per conversation per tick, the
 * store's schema and pragmas) in one transaction per tick, without the store's queue, Observables
 * or seq checks. `ratio` = store / raw: the share of raw SQLite speed the port keeps.
 * Samples of `framesPerSample` frames alternate store, raw, store, …; the figures are medians.
 */

export interface StoreAppendConfig {
  readonly framesPerSample?: number;
  readonly samples?: number;
}

const DEFAULT_STORE_APPEND = Object.freeze({ framesPerSample: 40_000, samples: 5 });
const CONVERSATIONS = 10;
const FRAMES_PER_CONVERSATION_PER_TICK = 10;
const FRAMES_PER_TICK = CONVERSATIONS * FRAMES_PER_CONVERSATION_PER_TICK;

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

/**
 * The frames of consecutive ticks, as the hub numbers them: conversation by conversation within a
 * tick, each conversation's seq going on from its last. Made before the clock starts (the hub has them).
 */
function createTicks(ticks: number): StoredFrame<StepwiseEvent>[][] {
  const events = Array.from({ length: CONVERSATIONS }, (_, conv) => Array.from({ length: 20 }, (_, index) => eventAt(`conv_${conv}`, index)));
  return Array.from({ length: ticks }, (_, tick) =>
    Array.from({ length: FRAMES_PER_TICK }, (_, i) => {
      const conv = Math.floor(i / FRAMES_PER_CONVERSATION_PER_TICK);
      const seq = tick * FRAMES_PER_CONVERSATION_PER_TICK + (i % FRAMES_PER_CONVERSATION_PER_TICK) + 1;
      return { seq, event: events[conv]?.[seq % 20] as StepwiseEvent };
    }),
  );
}

type Sampler = (ticks: readonly StoredFrame<StepwiseEvent>[][]) => Promise<number>;

function storeSampler(stores: StoreLib, dataDir: string): Sampler {
  return async (ticks) => {
    const store = stores.createSqliteStore<StepwiseEvent>({ dataDir });
    const started = nowUs();
    for (const frames of ticks) {
      let committed$: Observable<never> | undefined;
      for (const frame of frames) committed$ = store.appendFrames([frame]);
      if (committed$) await lastValueFrom(committed$, { defaultValue: undefined });
    }
    const seconds = (nowUs() - started) / 1e6;
    await store.close();
    return (ticks.length * FRAMES_PER_TICK) / seconds;
  };
}

/** The store's frames table and pragmas (src/store/sqlite), written directly. */
function rawSampler(file: string): Sampler {
  return async (ticks) => {
    const db = new Database(file);
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('page_size = 8192');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = normal');
    db.pragma('wal_autocheckpoint = 4096');
    db.exec(`CREATE TABLE IF NOT EXISTS frames (id INTEGER PRIMARY KEY, conv_id TEXT NOT NULL, first_seq INTEGER NOT NULL,
      last_seq INTEGER NOT NULL, events TEXT NOT NULL, shared TEXT);
      CREATE INDEX IF NOT EXISTS frames_by_conversation ON frames (conv_id, last_seq)`);
    const insert = db.prepare(`INSERT INTO frames (conv_id, first_seq, last_seq, shared, events) VALUES (?, ?, ?, ?, ?)`);
    const writeTick = db.transaction((frames: readonly StoredFrame<StepwiseEvent>[]) => {
      for (let at = 0; at < frames.length; at += FRAMES_PER_CONVERSATION_PER_TICK) {
        const chunk = frames.slice(at, at + FRAMES_PER_CONVERSATION_PER_TICK);
        const first = chunk[0] as StoredFrame<StepwiseEvent>;
        // As the store writes a chunk (src/store/sqlite/frame-chunks.ts): one run's ids once, known here to be shared.
        const { conv_id, session_id, inference_id, turn_id } = first.event;
        const events = chunk.map(({ event: { conv_id: _c, session_id: _s, inference_id: _i, turn_id: _t, ...rest } }) => rest);
        const shared = JSON.stringify({ conv_id, session_id, inference_id, turn_id });
        insert.run(conv_id, first.seq, first.seq + chunk.length - 1, shared, JSON.stringify(events));
      }
    });
    const started = nowUs();
    for (const frames of ticks) writeTick(frames);
    const seconds = (nowUs() - started) / 1e6;
    db.close();
    return (ticks.length * FRAMES_PER_TICK) / seconds;
  };
}

export async function measureStoreAppend(stores: StoreLib, root: string, config: StoreAppendConfig = {}): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  const { framesPerSample, samples } = { ...DEFAULT_STORE_APPEND, ...config };
  const tickCount = Math.ceil(framesPerSample / FRAMES_PER_TICK);
  const store: number[] = [];
  const raw: number[] = [];
  // Each sample writes a fresh file (its seqs start at 1): a warm-up pair first, not counted.
  for (let sample = -1; sample < samples; sample += 1) {
    const ticks = createTicks(tickCount);
    const storeRate = await storeSampler(stores, join(root, `append_${sample + 1}`))(ticks);
    await settle();
    const rawRate = await rawSampler(join(root, `raw_${sample + 1}.db`))(ticks);
    await settle();
    if (sample < 0) continue;
    store.push(storeRate);
    raw.push(rawRate);
  }
  const spread = (values: readonly number[]): string => `${Math.round(Math.min(...values))}–${Math.round(Math.max(...values))}`;
  return {
    entries: [entry('store_append', median(store), 'frames/s', median(raw))],
    notes: [`store_append: ${samples} samples of ${tickCount * FRAMES_PER_TICK} frames; store ${spread(store)} frames/s, raw better-sqlite3 ${spread(raw)}`],
  };
}
