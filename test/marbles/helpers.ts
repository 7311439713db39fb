import { asyncScheduler, filter, map, Observable, type SchedulerAction, type SchedulerLike, type Subscription } from 'rxjs';
import type { Context } from 'rxjs-marbles/jest';
import { createLoopState, type RunContext } from '../../src/operators/loop-state.js';
import {
  createScriptedEngine,
  createSequentialIds,
  createStepController,
  createStepwise,
  createToolExecutor,
  createToolRegistry,
  defineTool,
  type Block,
  type Engine,
  type EngineEvent,
  type InferenceRequest,
  type RunResult,
  type LoopPorts,
  type LoopState,
  type ScriptedResponse,
  type Session,
  type StepControllerConfig,
  type Stepwise,
  type StepwiseConfig,
  type StepwiseEvent,
  type Tool,
  type ToolExecutorConfig,
} from '../../src/index.js';
import { createVirtualTool, labelOf, type VirtualTool } from '../../src/testing/index.js';

export { labelOf };

/** A tool-call response of the scripted engine. */
export const callEcho = (text: string, id?: string): ScriptedResponse => ({
  tool_calls: [{ ...(id ? { id } : {}), name: 'echo', arguments: { text } }],
});

export interface TestRuntime {
  readonly sw: Stepwise;
  readonly session: Session;
  readonly tool: VirtualTool;
  /** Hub events as labels, optionally only those whose label passes `keep`. */
  labels$(keep?: (label: string) => boolean): Observable<string>;
  events$(): Observable<StepwiseEvent>;
}

export interface TestRuntimeOptions extends Partial<Omit<StepwiseConfig, 'engine'>> {
  readonly responses?: readonly ScriptedResponse[];
  readonly engine?: Engine;
  readonly tool?: VirtualTool;
  readonly stepMode?: boolean;
  readonly conv_id?: string;
}

/** A runtime on the scripted engine and a virtual echo tool; every timer is virtual inside marbles(). */
export function createTestRuntime(options: TestRuntimeOptions = {}): TestRuntime {
  const { responses = [], stepMode = false, conv_id = 'c1', tool = createVirtualTool(), ...config } = options;
  const engine = options.engine ?? createScriptedEngine({ responses });
  const sw = createStepwise({ ids: createSequentialIds(), ...config, engine, tools: config.tools ?? [tool] });
  const session = sw.sessions.open({ conv_id });
  if (stepMode) sw.controller.enable(session.session_id);
  const events$ = (): Observable<StepwiseEvent> => sw.hub.events$.pipe(map(({ event }) => event));
  return {
    sw,
    session,
    tool,
    events$,
    labels$: (keep = () => true) => events$().pipe(map(labelOf), filter(keep)),
  };
}

/** Labels that mark the pause lifecycle and the run's end. */
export const isPauseOrEnd = (label: string): boolean => /^(paused|resumed|run-ended)/.test(label);

/** A minimal run context for driving one operator by itself. */
export function runContext(overrides: Partial<RunContext> = {}): RunContext {
  return { conv_id: 'c1', session_id: 'sess_1', inference_id: 'inf_1', turn_id: 'turn_1', history: [], ...overrides };
}

/** Marble values for pause and end labels. */
export const PAUSE_LABELS = {
  p: 'paused:after_inference',
  q: 'paused:after_tools',
  r: 'resumed:continued',
  d: 'resumed:denied',
  x: 'resumed:edited',
  t: 'resumed:timeout',
  o: 'resumed:disabled',
  c: 'resumed:cancelled',
  e: 'run-ended:completed',
  f: 'run-ended:failed',
  k: 'run-ended:cancelled',
  m: 'run-ended:max_iterations',
} as const;

/** The engine's last event of an inference: the answer is complete. */
export const FINISHED: EngineEvent = { type: 'finished', model: 'm-1', usage: { input_tokens: 1, output_tokens: 1 }, stop_reason: 'stop' };

/** An engine port whose every inference is `stream` (a hot or cold test observable, to assert its subscriptions). */
export const engineOf = (stream: Observable<EngineEvent>): Engine => ({ name: 'test', model: 'm-1', infer: () => stream });

/** A tool port named `name` whose every call is `stream` (JSON Schema parameters: any object). */
export const toolOf = (name: string, stream: Observable<unknown>): Tool =>
  defineTool({ name, description: `${name} (a test observable)`, parameters: { type: 'object' }, execute: () => stream });

/** A `tool_call` block the model asked for, pending until a `tool_use` of the same id follows. */
export const toolCallBlock = (id: string, name: string, args: unknown = {}): Block => ({ id: `b_${id}`, kind: 'tool_call', payload: { id, name, args } });

/** A run's state with these blocks, for driving one operator by itself. */
export const loopState = (blocks: readonly Block[] = [], more: Parameters<typeof createLoopState>[2] = {}): LoopState =>
  createLoopState(runContext(), blocks, more);

export interface TestLoopPortsOptions {
  readonly engine?: Engine;
  readonly tools?: readonly Tool[];
  readonly executor?: ToolExecutorConfig;
  readonly controller?: StepControllerConfig;
}

/**
 * The loop's ports on the default schedulers (virtual inside marbles()), with every published event kept:
 * what `createStepwise` wires, without a runtime, for driving the operators one by one.
 */
export function createTestLoopPorts(options: TestLoopPortsOptions = {}): { ports: LoopPorts; published: StepwiseEvent[] } {
  const published: StepwiseEvent[] = [];
  const publish = (event: StepwiseEvent): void => void published.push(event);
  const ids = createSequentialIds();
  const registry = createToolRegistry([...(options.tools ?? [])]);
  const ports: LoopPorts = {
    engine: options.engine ?? engineOf(new Observable<EngineEvent>((subscriber) => subscriber.error(new Error('no engine in this test')))),
    registry,
    executor: createToolExecutor(registry, options.executor),
    controller: createStepController({ ids, publish }, options.controller),
    publish,
    scheduler: asyncScheduler,
    ids,
  };
  return { ports, published };
}

/**
 * A silent cold test observable (`log`, never emitting) that is subscribed exactly while what it
 * watches is, so `m.expect(probe.log).toHaveSubscriptions('^--!')` says when subscribers came and
 * went for streams that are not test observables themselves: a controller's pause, a hub's view,
 * or the actions a port's clock runs (a pause's deadline timer).
 */
export interface Probe {
  readonly log: Observable<never>;
  /** `source$`, logged in `log` while subscribed. */
  watch<T>(source$: Observable<T>): Observable<T>;
  /** `scheduler` (default asyncScheduler, virtual inside marbles()) with each action logged from scheduled to ran or cancelled. */
  clock(scheduler?: SchedulerLike): SchedulerLike;
}

export function createProbe(m: Pick<Context, 'cold'>): Probe {
  const log = m.cold<never>('-');
  return {
    log,
    watch: <T>(source$: Observable<T>) =>
      new Observable<T>((subscriber) => {
        const life = log.subscribe();
        subscriber.add(() => life.unsubscribe());
        subscriber.add(source$.subscribe(subscriber));
      }),
    clock: (scheduler = asyncScheduler) => ({
      now: () => scheduler.now(),
      schedule<S>(work: (this: SchedulerAction<S>, state?: S) => void, delay?: number, state?: S): Subscription {
        const life = log.subscribe();
        const action = scheduler.schedule(function (this: SchedulerAction<S>, value?: S) {
          life.unsubscribe();
          work.call(this, value);
        }, delay, state);
        action.add(() => life.unsubscribe());
        return action;
      },
    }),
  };
}

/** A scripted engine that keeps every request it receives, to assert what the model was shown. */
export function recordingEngine(responses: readonly ScriptedResponse[]): { engine: Engine; requests: InferenceRequest[] } {
  const scripted = createScriptedEngine({ responses });
  const requests: InferenceRequest[] = [];
  return { engine: { ...scripted, infer: (request) => (requests.push(request), scripted.infer(request)) }, requests };
}

/** Starts a run at `frame` of virtual time; the box holds its result once it ends. */
export function startAt(m: { scheduler: { schedule(work: () => void, delay: number): unknown } }, frame: number, start: () => Observable<RunResult>) {
  const box: { result?: RunResult } = {};
  m.scheduler.schedule(() => start().subscribe((result) => (box.result = result)), frame);
  return box;
}

