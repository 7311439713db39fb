import type { Engine, Stepwise, Tool } from '../src/index.js';
import { entry, median, type BenchEntry } from './bench-entry.js';
import type { StepwiseLib } from './lib.js';
import { createEchoTool, createStepEngine, nowUs, settle, within } from './scenario.js';

/**
 * Agents inside agents (docs/protocol.md, Agents inside agents), against the same work at the root:
 * - `nested_step`: µs per step of a `steps`-step run done by a child at depth 1 (the root asks the agent once, then
 *   answers: its two inferences and the agent call are counted in), against `loop_step`'s case, the same steps done
 *   by the root itself; interleaved rounds, medians.
 * - `nested_resume`: continue -> the next pause of the same run, the pauses being a child's at depth 1, against the
 *   same at depth 0 (step mode on, as `resume_in_process` times it); interleaved runs, medians.
 */
export interface NestedBenchConfig {
  readonly steps?: number;
  readonly runsPerSample?: number;
  readonly rounds?: number;
  readonly warmupRounds?: number;
}

const DEFAULT_NESTED_BENCH = Object.freeze({ steps: 15, runsPerSample: 4, rounds: 200, warmupRounds: 30 });

/** The root's script when the steps are its child's: one call of the agent, then an answer. */
const ASK_AGENT = { responses: [{ tool_calls: [{ name: 'worker', arguments: { prompt: 'go' } }] }, { text: 'done' }] };

/**
 * The agent tool whose child does the steps: made once, as an application makes its tools, so its child's own
 * registry is built once too. Its engine's script plays per conversation, and each run is a new one.
 */
function workerOf(lib: StepwiseLib, echo: Tool, steps: number): Tool {
  return lib.defineAgentTool({
    name: 'worker',
    description: 'Does the steps.',
    parameters: { type: 'object', properties: { prompt: { type: 'string' } } },
    agent: { engine: createStepEngine(lib, steps), tools: [echo] },
  });
}

/** A runtime whose steps are done by the root (no `worker`) or by a child at depth 1. */
function runtimeOf(lib: StepwiseLib, echo: Tool, steps: number, worker?: Tool): Stepwise {
  const engine: Engine = worker ? lib.createScriptedEngine(ASK_AGENT) : createStepEngine(lib, steps);
  return lib.createStepwise({ engine, tools: worker ? [worker] : [echo], maxIterations: steps + 10, pauseTimeoutMs: 60_000 });
}

/** µs per step of `runs` runs, each in a new session of a fresh runtime. */
async function sampleSteps(lib: StepwiseLib, echo: Tool, steps: number, runs: number, worker?: Tool): Promise<number> {
  const sw = runtimeOf(lib, echo, steps, worker);
  const sessions = Array.from({ length: runs }, () => sw.sessions.open());
  const started = nowUs();
  for (const session of sessions) {
    const result = await session.start({ prompt: 'go' }).result();
    if (result.status !== 'completed') throw new Error(`nested bench: a run ended ${result.status}: ${result.error ?? ''}`);
  }
  const elapsed = nowUs() - started;
  sw.dispose();
  return elapsed / (runs * steps);
}

/** µs from each continue of a pause at `depth` to the run's next pause, over one run of `steps` steps in step mode. */
async function sampleResumes(lib: StepwiseLib, echo: Tool, steps: number, worker?: Tool): Promise<number[]> {
  const sw = runtimeOf(lib, echo, steps, worker);
  const session = sw.sessions.open();
  sw.controller.enable(session.session_id);
  const depth = worker ? 1 : undefined;
  const times: number[] = [];
  let sent: number | undefined;
  const subscription = sw.hub.events$.subscribe(({ event }) => {
    if (event.type !== 'paused') return;
    if (sent !== undefined && event.pause.depth === depth) times.push(nowUs() - sent);
    sent = undefined;
  });
  const run = session.start({ prompt: 'go' });
  const result = run.result();
  for (let pause = await run.nextPause(); pause; pause = await run.nextPause()) {
    // Only a continue from a pause at the measured depth to the next one there is timed.
    sent = pause.depth === depth ? nowUs() : undefined;
    sw.controller.submit({ pause_id: pause.pause_id });
  }
  if ((await result).status !== 'completed') throw new Error('nested bench: a stepped run did not complete');
  subscription.unsubscribe();
  sw.dispose();
  return times;
}

export async function runNestedBenchmarks(lib: StepwiseLib, config: NestedBenchConfig = {}): Promise<BenchEntry[]> {
  const { steps, runsPerSample, rounds, warmupRounds } = { ...DEFAULT_NESTED_BENCH, ...config };
  const echo = createEchoTool(lib);
  const worker = workerOf(lib, echo, steps);
  const flat: number[] = [];
  const nested: number[] = [];
  const flatResumes: number[] = [];
  const nestedResumes: number[] = [];
  for (let round = 0; round < warmupRounds + rounds; round += 1) {
    const timed = round >= warmupRounds;
    const f = await within(sampleSteps(lib, echo, steps, runsPerSample), 10_000, 'a flat sample');
    await settle();
    const n = await within(sampleSteps(lib, echo, steps, runsPerSample, worker), 10_000, 'a nested sample');
    await settle();
    const fr = await within(sampleResumes(lib, echo, steps), 10_000, 'a flat stepped run');
    await settle();
    const nr = await within(sampleResumes(lib, echo, steps, worker), 10_000, 'a nested stepped run');
    await settle();
    if (!timed) continue;
    flat.push(f);
    nested.push(n);
    flatResumes.push(...fr);
    nestedResumes.push(...nr);
  }
  return [entry('nested_step', median(nested), 'µs', median(flat)), entry('nested_resume', median(nestedResumes), 'µs', median(flatResumes))];
}
