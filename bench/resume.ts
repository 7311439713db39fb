import type { PauseInfo, Stepwise } from '../src/index.js';
import { entry, median, percentile, type BenchEntry } from './bench-entry.js';
import type { StepwiseLib } from './lib.js';
import { createEchoTool, createStepEngine, nowUs, settle, within } from './scenario.js';

/**
 * Continue to resume, in process (README.md, Benchmarks: `resume_in_process`): step mode on, zero-latency scripted
 * engine, the echo tool.
 *
 * What is timed, exactly: from the call of `controller.submit({ pause_id })` to the moment a hub
 * subscriber receives the next `paused` event of that run. With step mode on a run pauses twice per
 * step, so one "continue to the next pause" crosses only half of a step:
 * - `tool` half: continue at `after_inference` → the tool runs → `paused` at `after_tools`;
 * - `inference` half: continue at `after_tools` → one inference → `paused` at `after_inference`.
 * `resume_in_process` is, per step, the sum of its two halves (one tool and one inference, as the
 * spec and the peers' figures count it); its median is reported, with each half's median beside it.
 * The time between a pause arriving and the bench submitting its continue (an `await`) is not timed.
 */

export interface ResumeBenchConfig {
  /** Timed steps after the warm-up. */
  readonly steps?: number;
  readonly warmupSteps?: number;
  /** Tool-call answers per run; each run is a fresh conversation. */
  readonly stepsPerRun?: number;
  /** Runs per runtime before a fresh one, so hub buffers and sessions stay small. */
  readonly runsPerRuntime?: number;
}

const DEFAULT_RESUME_BENCH = Object.freeze({ steps: 8000, warmupSteps: 1000, stepsPerRun: 20, runsPerRuntime: 50 });

/**
 * Follows one runtime's `paused` events, stamping each on arrival. A run resumes after `submit` has
 * returned, so most takes wait: one watchdog interval per watcher (not a timer per take, which would
 * add its own set/clear to every timed half) fails a take that waits longer than `stallMs`.
 */
function createPauseWatcher(sw: Stepwise, stallMs = 5000) {
  let arrived: { pause: PauseInfo; at: number } | undefined;
  let waiting: { resolve: () => void; reject: (error: Error) => void; since: number } | undefined;
  const subscription = sw.hub.events$.subscribe(({ event }) => {
    if (event.type !== 'paused') return;
    arrived = { pause: event.pause, at: nowUs() };
    waiting?.resolve();
  });
  const watchdog = setInterval(() => {
    if (waiting && Date.now() - waiting.since > stallMs) waiting.reject(new Error(`resume bench: no pause arrived within ${stallMs} ms`));
  }, 500);
  return {
    /** The pause that arrived since the last take, waiting for it if it has not yet. */
    take: async (): Promise<{ pause: PauseInfo; at: number }> => {
      if (!arrived) await new Promise<void>((resolve, reject) => (waiting = { resolve, reject, since: Date.now() }));
      waiting = undefined;
      const taken = arrived;
      arrived = undefined;
      if (!taken) throw new Error('resume bench: no pause arrived');
      return taken;
    },
    pending: () => arrived !== undefined,
    stop: () => {
      clearInterval(watchdog);
      subscription.unsubscribe();
    },
  };
}

export async function runResumeBenchmarks(lib: StepwiseLib, config: ResumeBenchConfig = {}): Promise<BenchEntry[]> {
  const { steps, warmupSteps, stepsPerRun, runsPerRuntime } = { ...DEFAULT_RESUME_BENCH, ...config };
  const tool = createEchoTool(lib);
  const toolHalf: number[] = [];
  const inferenceHalf: number[] = [];
  const cycles: number[] = [];
  let done = 0;
  while (done < warmupSteps + steps) {
    const sw = lib.createStepwise({ engine: createStepEngine(lib, stepsPerRun), tools: [tool], maxIterations: stepsPerRun + 10, pauseTimeoutMs: 60_000 });
    const watcher = createPauseWatcher(sw);
    for (let r = 0; r < runsPerRuntime && done < warmupSteps + steps; r += 1) {
      const session = sw.sessions.open();
      sw.controller.enable(session.session_id);
      const handle = session.start({ prompt: 'go' });
      let first = await watcher.take();
      // Every step but the last, which ends the run at its final inference instead of pausing.
      for (let step = 0; step < stepsPerRun - 1; step += 1) {
        if (first.pause.phase !== 'after_inference') throw new Error(`resume bench: expected after_inference, got ${first.pause.phase}`);
        const toolStart = nowUs();
        sw.controller.submit({ pause_id: first.pause.pause_id });
        const afterTools = await watcher.take();
        const inferenceStart = nowUs();
        sw.controller.submit({ pause_id: afterTools.pause.pause_id });
        first = await watcher.take();
        done += 1;
        if (done > warmupSteps) {
          toolHalf.push(afterTools.at - toolStart);
          inferenceHalf.push(first.at - inferenceStart);
          cycles.push(afterTools.at - toolStart + (first.at - inferenceStart));
        }
      }
      // Let the run finish (the last tool, its pause, the final text), untimed.
      sw.controller.submit({ pause_id: first.pause.pause_id });
      const last = await watcher.take();
      sw.controller.submit({ pause_id: last.pause.pause_id });
      const result = await within(handle.result(), 5000, 'a stepped run');
      if (result.status !== 'completed') throw new Error(`resume bench: run ended ${result.status}: ${result.error ?? ''}`);
      sw.controller.disable(session.session_id);
    }
    watcher.stop();
    sw.dispose();
    await settle();
  }
  return [
    entry('resume_in_process', median(cycles), 'µs'),
    entry('resume_in_process_p99', percentile(cycles, 99), 'µs'),
    entry('resume_in_process_tool_half', median(toolHalf), 'µs'),
    entry('resume_in_process_inference_half', median(inferenceHalf), 'µs'),
  ];
}
