import { concatMap, defer, filter, from, map, mergeMap, of, reduce, takeWhile, toArray, type Observable, type OperatorFunction } from 'rxjs';
import { pendingToolCalls, type Block, type ToolCall } from '../core/turns.js';
import { eventFrom } from '../streams/events.js';
import { deniedBy, type PauseDecision } from '../streams/step-commands.js';
import type { ChildRuns, ToolExecutor, ToolOutcome, ToolProgress } from '../tools/tool-executor.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import { isVirtualTimeMisuse } from '../tools/virtual-time.js';
import { endWith, hasEnded, executorOf, withBlocks, withResults, type LoopPorts, type LoopState, type RunContext } from './loop-state.js';

export interface ExecuteToolsConfig {
  /** How many tool calls run at once. Default 3. */
  readonly maxParallelTools?: number;
}

const DEFAULT_EXECUTE_TOOLS_CONFIG = Object.freeze({ maxParallelTools: 3 });

/**
 * Executes the turn's pending tool calls, honouring the decision of the last `after_inference` pause
 * (denied calls get an error result, edited calls run with the new arguments), and appends one
 * `tool_use` block per call, in call order.
 *
 * ```
 * state:   --s------------------|
 * tool a:    ----a|                  (maxParallelTools: 2)
 * tool b:    --b|
 * tool c:       ----c|               (starts when b's slot frees)
 * output:  ---------s'----------|    (s' + tool_use a, b, c in call order)
 * ```
 *
 * Tool failures are results the model sees; a failure under the `abort` policy stops the other calls
 * and ends the run as `failed`. Unsubscribing aborts every running tool's AbortSignal.
 *
 * @example
 * of(state).pipe(executeTools(ports, { maxParallelTools: 2 }))
 */
export function executeTools(ports: ToolsPorts, config: ExecuteToolsConfig = {}): OperatorFunction<LoopState, LoopState> {
  const runTools = toolsPhase(ports, config);
  // concatMap: one batch of calls per state, in order.
  return concatMap((state) => runTools(state));
}

type ToolsPorts = Pick<LoopPorts, 'executor' | 'publish' | 'scheduler'> & Partial<Pick<LoopPorts, 'registry'>>;

/**
 * What `executeTools` does with one state, as a function: the tool loop calls it once per tools
 * phase with the pending calls it already knows, and needs no concatMap around a single state.
 */
export function toolsPhase(
  ports: ToolsPorts,
  config: ExecuteToolsConfig = {},
  /** The child runs of a state's agent calls (the tool loop's; see ./child-run.ts). Default: agent calls fail. */
  children?: (state: LoopState) => ChildRuns,
): (state: LoopState, pending?: readonly ToolCall[]) => Observable<LoopState> {
  const { maxParallelTools } = { ...DEFAULT_EXECUTE_TOOLS_CONFIG, ...config };
  if (!Number.isInteger(maxParallelTools) || maxParallelTools < 1) {
    throw new RangeError(`executeTools: maxParallelTools must be a positive integer, got ${maxParallelTools}`);
  }
  return (state, pending) => {
    const calls = hasEnded(state) ? [] : (pending ?? pendingToolCalls(state.blocks));
    if (calls.length === 0) return of(state);
    // Made only for a phase with an agent call: most phases have none, and it would be an allocation each.
    const registry = state.run.tools?.registry ?? ports.registry;
    const kids = children && registry && hasAgentCall(registry, calls) ? children(state) : undefined;
    return runCalls(ports, maxParallelTools, applyEdits(state), calls, kids);
  };
}

const hasAgentCall = (registry: ToolRegistry, calls: readonly ToolCall[]): boolean => calls.some((call) => registry.get(call.name)?.agent !== undefined);

function runCalls(
  ports: ToolsPorts,
  maxParallelTools: number,
  state: LoopState,
  requested: readonly ToolCall[],
  children: ChildRuns | undefined,
): Observable<LoopState> {
  const { run } = state;
  const decision = state.decision ?? CONTINUE;
  const calls = decision.action === 'edit' ? requested.map((call) => (call.id in decision.edits ? { ...call, args: decision.edits[call.id] } : call)) : requested;
  const executor = executorOf(ports, run);

  const runOne = (call: ToolCall): Observable<ToolProgress> => progressOf(executor, run, decision, call, children);
  /**
   * A call's progress folded into what follows from its outcome: each event is published as it comes
   * (`started` before the tool runs), and the fold emits once the call completes. One `reduce` rather
   * than `tap`, `filter` and `map`: two subscriptions less per tool call.
   */
  const settled = <A>(call: ToolCall, seed: A, onOutcome: (outcome: ToolOutcome) => A) =>
    reduce((acc: A, progress: ToolProgress): A => {
      publishProgress(ports, run, call, progress);
      return progress.type === 'finished' ? onOutcome(progress.outcome) : acc;
    }, seed);

  // One call (the common case) needs no fan-out, ordering or early stop.
  const only = calls.length === 1 ? calls[0] : undefined;
  if (only) return runOne(only).pipe(settled(only, state, (outcome) => withToolUses(state, [outcome])));

  return defer(() =>
    from(calls.map((call, index) => ({ call, index }))).pipe(
      // mergeMap with a limit: tools run in parallel, at most maxParallelTools at once.
      mergeMap(({ call, index }) => runOne(call).pipe(settled(call, NOT_SETTLED, (outcome): Settled => ({ outcome, index }))), maxParallelTools),
      filter(isSettled),
      // An `abort` failure ends the run: stop waiting for (and abort) the other calls.
      takeWhile(({ outcome }) => !outcome.abortsRun, true),
      toArray(),
      map((finished) => withToolUses(state, [...finished].sort((a, b) => a.index - b.index).map(({ outcome }) => outcome))),
    ),
  );
}

/**
 * What the decision makes of one call, as progress: `started` (unless denied), then `finished` with its
 * outcome. Apart from the fan-out because it is the decision's meaning per call, the same for one call
 * as for many.
 */
function progressOf(executor: ToolExecutor, run: RunContext, decision: PauseDecision, call: ToolCall, children?: ChildRuns): Observable<ToolProgress> {
  // A question's answer is its result (docs/protocol.md, Questions for a human): given by a human, nothing runs.
  if (decision.action === 'answer' && Object.hasOwn(decision.answers, call.id)) return answered(call, decision.answers[call.id]);
  const denial = deniedBy(decision, call.id);
  // The digest the decision approved, if one was taken: the executor refuses other arguments.
  if (denial === undefined) return executor.execute(call, run.allowedTools, decision.action === 'abort' ? undefined : decision.args_digests?.[call.id], children);
  return of({ type: 'finished', outcome: { tool_call_id: call.id, name: call.name, result: null, error: `denied by operator: ${denial}`, abortsRun: false } });
}

/**
 * The state after a tools phase: one `tool_use` block per outcome, in call order, and the run ended
 * as `failed` if an outcome aborts it. A pure step of the transcript, whatever ran the calls.
 */
function withToolUses(state: LoopState, outcomes: readonly ToolOutcome[]): LoopState {
  const uses: Block[] = outcomes.map((outcome) => ({
    id: `${outcome.tool_call_id}:use`,
    kind: 'tool_use',
    role: 'tool',
    payload: { id: outcome.tool_call_id, result: outcome.result, ...(outcome.error === undefined ? {} : { error: outcome.error }) },
  }));
  const next = withResults(state, state.blocks.concat(uses));
  const fatal = outcomes.find((outcome) => outcome.abortsRun);
  return fatal ? endWith(next, { status: 'failed', error: `tool "${fatal.name}" failed under the abort policy: ${fatal.error}` }) : next;
}

/** An answered question's progress: it starts with the model's arguments and finishes with the answer. */
const answered = (call: ToolCall, answer: unknown): Observable<ToolProgress> =>
  of<ToolProgress[]>(
    { type: 'started', args: call.args },
    { type: 'finished', outcome: { tool_call_id: call.id, name: call.name, result: answer, abortsRun: false } },
  );

/** No decision taken (step mode off): every call runs as asked. */
const CONTINUE: PauseDecision = Object.freeze({ action: 'continue' });

interface Settled {
  readonly outcome: ToolOutcome;
  readonly index: number;
}
/** What a call's fold holds before its outcome (an executor always ends with one; this is never emitted in practice). */
const NOT_SETTLED = undefined;
const isSettled = (value: Settled | undefined): value is Settled => value !== undefined;

/** `tool-execution-started` when a call starts; its result (and any warning) when it finishes. */
function publishProgress(ports: Pick<LoopPorts, 'publish' | 'scheduler'>, run: RunContext, call: ToolCall, progress: ToolProgress): void {
  const at = progress.at ?? ports.scheduler.now();
  if (progress.type === 'started') {
    ports.publish(eventFrom('tool-execution-started', run, at, { tool_call_id: call.id, name: call.name, args: progress.args }));
    return;
  }
  const { outcome } = progress;
  const { tool_call_id, name, result } = outcome;
  if (outcome.rejected) {
    ports.publish(eventFrom('log', run, at, { level: 'warn', message: outcome.error ?? 'tool call rejected', fields: { tool_call_id, name, rejected: outcome.rejected } }));
  }
  if (isVirtualTimeMisuse(outcome.error)) ports.publish(eventFrom('log', run, at, { level: 'error', message: outcome.error ?? '', fields: { tool_call_id, name } }));
  ports.publish(eventFrom('tool-result', run, at, { tool_call_id, name, result, ...(outcome.error === undefined ? {} : { error: outcome.error }) }));
  ports.publish(
    eventFrom('tool-execution-finished', run, at, { tool_call_id, name, ...(outcome.duration_ms === undefined ? {} : { duration_ms: outcome.duration_ms }) }),
  );
}

/** Edited calls keep the model's arguments in metadata, so the transcript shows what was asked and what ran. */
function applyEdits(state: LoopState): LoopState {
  const decision = state.decision;
  if (decision?.action !== 'edit') return state;
  const blocks = state.blocks.map((block): Block => {
    if (block.kind !== 'tool_call' || !(block.payload.id in decision.edits)) return block;
    return {
      ...block,
      payload: { ...block.payload, args: decision.edits[block.payload.id] },
      metadata: { ...block.metadata, original_args: block.payload.args, edited: true },
    };
  });
  return withBlocks(state, blocks);
}
