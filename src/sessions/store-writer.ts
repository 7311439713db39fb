import type { Engine } from '../core/engine.js';
import type { DecisionRecord, RunCheckpoint, StepSetting, Store } from '../core/store.js';
import type { Writable } from '../core/writable.js';
import type { LoopPhase, LoopState } from '../operators/loop-state.js';
import { engineOf, type LoopPorts } from '../operators/loop-state.js';
import type { StepwiseEvent } from '../streams/events.js';
import { deniedBy, isAnswered, type PauseResolution } from '../streams/step-commands.js';
import { pendingToolCalls, type ToolCall } from '../core/turns.js';
import type { ToolRegistry } from '../tools/tool-registry.js';
import type { RunResult } from './run.js';
import type { Session } from './session.js';

/**
 * What the runtime tells its store (docs/protocol.md, Durability), in one place: the loop, the hub and the controller call
 * these through their ports and never see the store. Every write is queued and returns at once.
 */
export interface StoreWriter {
  /** A session opened, or its profile or step mode changed. */
  conversation(session: Session, step: StepSetting): void;
  step(convId: string, step: StepSetting): void;
  /**
   * A phase boundary: the run's checkpoint, its turn so far and its engine's state. `pending`: the
   * state's pending tool calls when the loop has found them already.
   */
  boundary(state: LoopState, next: LoopPhase, profile: string | undefined, pending?: readonly ToolCall[]): void;
  /** Before `paused` is published, so a pause a client has seen is stored. */
  published(event: StepwiseEvent): void;
  /** Every pause resolution: a decision row. */
  resolved(resolution: PauseResolution): void;
  /** The run ended for good: its final turn, no checkpoint. */
  runEnded(result: RunResult): void;
}

export function createStoreWriter(store: Store, ports: Pick<LoopPorts, 'engine' | 'scheduler'>): StoreWriter {
  // The engine of each running run on an engine of its own (a profile's, a run's), from its boundaries:
  // its state after the last inference is saved at the end. A run on the runtime's engine has no entry
  // (most runs; a hibernated one needs none).
  const engines = new Map<string, Engine>();
  const saveEngineState = (engine: Engine, convId: string): void => {
    const state = engine.state?.(convId);
    if (state !== undefined) store.putEngineState(convId, state);
  };
  return {
    conversation: (session, step) =>
      store.putConversation({
        conv_id: session.conv_id,
        session_id: session.session_id,
        created_at: session.created_at,
        step,
        ...(session.owner === undefined ? {} : { owner: session.owner }),
        ...(session.profile === undefined ? {} : { profile: session.profile }),
        ...(session.forked_from === undefined ? {} : { forked_from: session.forked_from }),
      }),
    step: (convId, step) => store.setStep(convId, step),
    boundary: (state, next, profile, pending) => {
      const { run } = state;
      store.putTurn(run.conv_id, { id: run.turn_id, blocks: state.blocks });
      const engine = engineOf(ports, run);
      if (engine !== ports.engine) engines.set(run.inference_id, engine);
      // An engine's state changes only in an inference: saved at the boundaries that follow one.
      if (next !== 'inference') saveEngineState(engine, run.conv_id);
      store.putCheckpoint(toCheckpoint(state, next, profile, ports.scheduler.now(), pending));
    },
    published: (event) => {
      // A restored pause is the stored one (same id, deadline and calls): a restart rewrites none of them.
      if (event.type === 'paused') {
        // A child run's pause is not stored while its run keeps no checkpoint: a restart could not bring it back.
        if (!event.restored && event.pause.depth === undefined) store.putPause(event.pause);
      }
      // Queued before the call runs: a call that cannot run twice waits for its checkpoint, and so for this row too.
      else if (event.type === 'granted') store.recordDecision(grantedDecision(event));
    },
    // The run's checkpoint keeps the decision until the run goes past the pause (a cancelled run does not go on).
    resolved: (resolution) =>
      store.recordDecision(
        toDecision(resolution, ports.scheduler.now()),
        resolution.reason === 'cancelled' ? undefined : { pause_id: resolution.pause.pause_id, decision: resolution.decision },
      ),
    runEnded: (result) => {
      store.putTurn(result.conv_id, result.turn);
      store.deleteCheckpoint(result.conv_id, result.inference_id);
      saveEngineState(engines.get(result.inference_id) ?? ports.engine, result.conv_id);
      engines.delete(result.inference_id);
    },
  };
}

/**
 * The loop's state as the store keeps it: what cannot be stored (engine, tools, cancel) is rebuilt at
 * recovery. Optional fields are assigned only when set, not spread in from conditional objects: such
 * spreads cost far more per boundary, and a step crosses two.
 */
export function toCheckpoint(state: LoopState, next: LoopPhase, profile: string | undefined, at_ms: number, pending?: readonly ToolCall[]): RunCheckpoint {
  const { run, decision } = state;
  const system = run.history[0]?.kind === 'system' ? run.history[0].payload.text : undefined;
  const checkpoint: Writable<RunCheckpoint> = {
    conv_id: run.conv_id,
    session_id: run.session_id,
    inference_id: run.inference_id,
    turn_id: run.turn_id,
    next,
    iteration: state.iteration,
    blocks: state.blocks,
    at_ms,
  };
  if (decision) checkpoint.decision = decision;
  // A copy: the tally goes on counting after this checkpoint is queued.
  if (run.usage && (run.usage.input_tokens > 0 || run.usage.output_tokens > 0)) checkpoint.usage = { input_tokens: run.usage.input_tokens, output_tokens: run.usage.output_tokens };
  if (run.allowedTools) checkpoint.allowed_tools = [...run.allowedTools];
  if (run.maxIterations !== undefined) checkpoint.max_iterations = run.maxIterations;
  if (system !== undefined) checkpoint.system_prompt = system;
  if (profile !== undefined) checkpoint.profile = profile;
  // At the tools boundary every call about to run is "running" until its result is in the next checkpoint.
  if (next === 'tools') checkpoint.running_tool_call_ids = runningCalls(state, pending ?? pendingToolCalls(state.blocks));
  return checkpoint;
}

/** Whether a call about to run (pending, not denied) is of a tool not declared idempotent: one a crash must not make run twice. */
export function hasUnrepeatableCall(registry: ToolRegistry, state: LoopState, pending?: readonly ToolCall[]): boolean {
  for (const call of pending ?? pendingToolCalls(state.blocks)) {
    if (runsCode(state, call.id) && registry.get(call.name)?.idempotent !== true) return true;
  }
  return false;
}

/** Whether a pending call's tool code runs: not denied, and not a question answered (its answer is its result). */
const runsCode = (state: LoopState, toolCallId: string): boolean => deniedBy(state.decision, toolCallId) === undefined && !isAnswered(state.decision, toolCallId);

/** The pending calls whose code runs (see `runsCode`). Loops, not `flatMap`: its arrays and callbacks cost time at every tools boundary. */
function runningCalls(state: LoopState, pending: readonly ToolCall[]): string[] {
  const running: string[] = [];
  for (const call of pending) if (runsCode(state, call.id)) running.push(call.id);
  return running;
}

/** The audit row of a resolution (docs/protocol.md, Durability): who, when, what was denied, what an edit changed. */
export function toDecision(resolution: PauseResolution, at_ms: number): DecisionRecord {
  const { pause, decision } = resolution;
  const base = {
    conv_id: pause.conv_id,
    pause_id: pause.pause_id,
    phase: pause.phase,
    inference_id: pause.inference_id,
    reason: resolution.reason,
    by: resolution.by ?? 'system',
    at_ms,
    // What the decision approved, bound to what runs (docs/protocol.md, Approvals bound to what runs).
    ...(decision.action !== 'abort' && decision.args_digests ? { args_digests: decision.args_digests } : {}),
  };
  if (decision.action === 'deny') {
    const ids = decision.tool_call_ids && decision.tool_call_ids.length > 0 ? decision.tool_call_ids : pause.tool_calls.map((call) => call.id);
    return { ...base, tool_call_ids: ids, message: decision.reason };
  }
  if (decision.action === 'edit' && decision.results) {
    return { ...base, tool_call_ids: Object.keys(decision.results), results: decision.results };
  }
  if (decision.action === 'edit') {
    const edits: Record<string, { before: unknown; after: unknown }> = {};
    for (const [id, after] of Object.entries(decision.edits)) {
      edits[id] = { before: pause.tool_calls.find((call) => call.id === id)?.input, after };
    }
    return { ...base, tool_call_ids: Object.keys(edits), edits };
  }
  if (decision.action === 'answer') return { ...base, tool_call_ids: Object.keys(decision.answers), answers: decision.answers };
  if (decision.action === 'abort') return { ...base, message: decision.reason };
  return base;
}

/** The audit row of a call a grant let run (docs/protocol.md, Grants): one per call, `by: "grant"`. */
export function grantedDecision(event: Extract<StepwiseEvent, { type: 'granted' }>): DecisionRecord {
  return {
    conv_id: event.conv_id,
    pause_id: event.decision_id,
    phase: 'after_inference',
    inference_id: event.inference_id,
    reason: 'granted',
    by: 'grant',
    at_ms: event.at,
    tool_call_ids: [event.tool_call_id],
    args_digests: { [event.tool_call_id]: event.args_digest },
    grant_id: event.grant_id,
  };
}
