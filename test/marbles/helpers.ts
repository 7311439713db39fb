import { filter, map, type Observable } from 'rxjs';
import type { RunContext } from '../../src/operators/loop-state.js';
import {
  createScriptedEngine,
  createSequentialIds,
  createStepwise,
  type Engine,
  type ScriptedResponse,
  type Session,
  type Stepwise,
  type StepwiseConfig,
  type StepwiseEvent,
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
