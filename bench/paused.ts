import type { RunHandle, Stepwise } from '../src/index.js';
import { entry, type BenchEntry } from './bench-entry.js';
import type { StepwiseLib } from './lib.js';
import { createEchoTool, createStepEngine, settle, settledHeap, within } from './scenario.js';

/**
 * 10 000 runs paused at once (README.md, Benchmarks: `paused_heap_per_run`, `paused_resolve_after_deadline`).
 *
 * Each run is its own conversation with step mode on; its first answer asks for one tool call, so it
 * pauses at `after_inference` and waits. Heap is measured after a full GC before the runs start and
 * once all are paused (both synchronously, so no deadline can pass in between).
 * Then the pauses run into their deadline (a short pause timeout, action `continue`). The figure is
 * the latest of all pauses' lateness: `resumed_at - deadline_ms` (epoch ms, the clock deadlines use).
 * Finally step mode is switched off (releasing the `after_tools` pauses that follow), every run
 * completes, the sessions are disposed and the hub forgets the conversations; heap per run compared
 * to the start shows what is left behind.
 */

export interface PausedBenchConfig {
  readonly runs?: number;
  /** Must leave room for starting every run and a GC before the first deadline. */
  readonly pauseTimeoutMs?: number;
}

const DEFAULT_PAUSED_BENCH = Object.freeze({ runs: 10_000, pauseTimeoutMs: 5000 });

const KB = 1024;

/** Starts `runs` runs that each pause at once; throws unless all of them did. */
export function pauseRuns(sw: Stepwise, runs: number): RunHandle[] {
  const handles: RunHandle[] = [];
  for (let i = 0; i < runs; i += 1) {
    const session = sw.sessions.open();
    sw.controller.enable(session.session_id);
    handles.push(session.start({ prompt: 'go' }));
  }
  const paused = sw.controller.pending().length;
  if (paused !== runs) throw new Error(`paused bench: ${paused} of ${runs} runs paused`);
  return handles;
}

/** Resolves when `count` pauses of the first batch resolved on their deadline; tracks the latest lateness. */
export function watchDeadlines(sw: Stepwise, count: number) {
  const deadlines = new Map(sw.controller.pending().map((pause) => [pause.pause_id, pause.deadline_ms]));
  let latest = 0;
  let resolved = 0;
  let onAll: (() => void) | undefined;
  const all = new Promise<void>((resolve) => (onAll = resolve));
  const subscription = sw.hub.events$.subscribe(({ event }) => {
    if (event.type !== 'resumed') return;
    const deadline = deadlines.get(event.pause_id);
    if (deadline === undefined) return;
    if (event.reason !== 'timeout') throw new Error(`paused bench: a pause resolved ${event.reason}, not on its deadline`);
    latest = Math.max(latest, Date.now() - deadline);
    resolved += 1;
    if (resolved === count) onAll?.();
  });
  return { all, latest: () => latest, firstDeadline: [...deadlines.values()].reduce((a, b) => Math.min(a, b), Infinity), stop: () => {
      subscription.unsubscribe();
      deadlines.clear();
    },
  };
}

/**
 * Switches step mode off (releasing the `after_tools` pauses that follow the first ones), waits for
 * every run to complete, disposes the sessions, and returns the conversation ids; nothing of the
 * runs stays reachable from the bench itself.
 */
async function releaseRuns(sw: Stepwise, handles: readonly RunHandle[]): Promise<string[]> {
  for (const session of sw.sessions.list()) sw.controller.disable(session.session_id);
  const results = await within(Promise.all(handles.map((handle) => handle.result())), 30_000, 'the released runs');
  const incomplete = results.filter((result) => result.status !== 'completed').length;
  if (incomplete > 0) throw new Error(`paused bench: ${incomplete} runs did not complete`);
  const convIds = sw.sessions.list().map((session) => session.conv_id);
  sw.sessions.dispose();
  await settle();
  return convIds;
}

export async function runPausedBenchmarks(lib: StepwiseLib, config: PausedBenchConfig = {}): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  const { runs, pauseTimeoutMs } = { ...DEFAULT_PAUSED_BENCH, ...config };
  const tool = createEchoTool(lib);
  // Warm-up: the same path on a small scale, so compiled code and lazily built tables exist before `before`.
  const warm = lib.createStepwise({ engine: createStepEngine(lib, 1), tools: [tool], pauseTimeoutMs });
  pauseRuns(warm, 200);
  warm.dispose();

  const sw = lib.createStepwise({ engine: createStepEngine(lib, 1), tools: [tool], pauseTimeoutMs, maxIterations: 5 });
  const before = settledHeap();
  const startedAt = Date.now();
  const handles = pauseRuns(sw, runs);
  const startMs = Date.now() - startedAt;
  const paused = settledHeap();
  const watch = watchDeadlines(sw, runs);
  const slack = watch.firstDeadline - Date.now();
  await within(watch.all, pauseTimeoutMs + 30_000, 'the paused runs');
  watch.stop();

  const latest = watch.latest();
  const convIds = await releaseRuns(sw, handles.splice(0));
  const disposed = settledHeap();
  for (const convId of convIds.splice(0)) sw.hub.forget(convId);
  const released = settledHeap();
  sw.dispose();

  return {
    entries: [
      entry('paused_heap_per_run', (paused - before) / runs / KB, 'KB'),
      entry('paused_resolve_after_deadline', latest, 'ms'),
      entry('paused_heap_after_dispose', (disposed - before) / runs / KB, 'KB'),
      entry('paused_heap_after_release', (released - before) / runs / KB, 'KB'),
    ],
    notes: [
      `paused: ${runs} runs started and paused in ${startMs} ms; first deadline ${slack} ms after the heap was measured` +
        (slack < 0 ? ' (NEGATIVE: deadlines passed during setup, lateness is overstated; raise pauseTimeoutMs)' : ''),
      'paused_heap_after_dispose: sessions disposed, hub buffers kept; paused_heap_after_release: hub.forget() too',
    ],
  };
}
