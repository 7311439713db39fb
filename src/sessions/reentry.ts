import type { Observable } from 'rxjs';
import type { RunCheckpoint, StoredPause, StoredPausePhase } from '../core/store.js';
import type { Block } from '../core/turns.js';
import { registryOf, withNext, type LoopPhase, type LoopPorts, type LoopState } from '../operators/loop-state.js';
import { applyResolution, pauseAt } from '../operators/pause-point.js';
import type { PauseDecision } from '../streams/step-commands.js';
import { eventFrom } from '../streams/events.js';
import type { HeldSession } from './session.js';

/**
 * One run re-entered at its checkpoint after a restart or a takeover (docs/protocol.md, Durability):
 * paused again at its stored pause (held, or hibernated), or going on at its checkpoint's phase, with
 * the `log` frame that says so first and the tool calls that were running answered. ./recovery.ts
 * brings back a whole snapshot and calls this for each of its runs.
 */

/** The error a running, non-idempotent tool call gets after a restart (docs/protocol.md, Durability). */
export const INTERRUPTED = 'interrupted: the server stopped while this tool ran';

/** What re-entering a run needs from the runtime: its loop's ports, and its pause taken up again as it was. */
export interface ReentryPorts {
  readonly loop: Pick<LoopPorts, 'registry' | 'publish' | 'scheduler' | 'controller'>;
  /** The next pause of this run at this phase takes the stored pause's id and deadline. */
  readonly expectPause: (pause: StoredPause) => void;
  /**
   * With hibernation on: the run comes back hibernated at its stored pause, which is pending again,
   * instead of held at its pause with its state built (docs/protocol.md, Durability).
   */
  readonly restoreHibernated?: (session: HeldSession, checkpoint: RunCheckpoint, pause: StoredPause) => boolean;
}

/** A snapshot's stored pauses by phase and run: a lookup per checkpoint, not a scan of every pause. */
export type PausesByPhase = Readonly<Record<StoredPausePhase, ReadonlyMap<string, StoredPause>>>;

/** A run re-entered at its checkpoint's phase: paused again at its stored pause, or going on. */
export function reenterRun(ports: ReentryPorts, session: HeldSession, checkpoint: RunCheckpoint, pauses: PausesByPhase): 'resumed' | 'paused' {
  const next = checkpoint.next;
  const pause = isPausePhase(next) ? pauses[next].get(checkpoint.inference_id) : undefined;
  const prepare = (state: LoopState): LoopState => reenter(ports.loop, checkpoint, state);
  if (!pause) {
    session.resume(checkpoint, goingOn(checkpoint, prepare));
    return 'resumed';
  }
  if (!ports.restoreHibernated || !pausesAgain(ports.loop, pause)) {
    restoreAtPause(ports, session, checkpoint, pause, prepare);
    return 'paused';
  }
  // Read before it is said to have resumed: restored hibernated at after_tools, its results are read now.
  if (pause.phase === 'after_tools') void checkpoint.blocks;
  // Said before the pause is published again, as the state of a run held at its pause says it.
  announceResumed(ports.loop, checkpoint);
  if (!ports.restoreHibernated(session, checkpoint, pause)) restoreAtPause(ports, session, checkpoint, pause, (state) => state);
  return 'paused';
}

/**
 * How a run without a pending pause re-enters: at its checkpoint's phase, or, when the pause it waited
 * at there was decided and the decision committed before the run went on, past that pause as decided
 * (the decision's `debugger.resume` is in the log already; pausing again would lose it).
 */
function goingOn(checkpoint: RunCheckpoint, prepare: (state: LoopState) => LoopState): (state: LoopState) => LoopState {
  const { next, resolved } = checkpoint;
  if (!resolved || !isPausePhase(next)) return prepare;
  return (state) => resumeAfter(next, prepare(state), resolved.decision);
}

const isPausePhase = (phase: LoopPhase): phase is StoredPausePhase => phase === 'after_inference' || phase === 'after_tools';

/** Held as its pause alone; its loop is built when the pause resolves (or the run is cancelled). */
function restoreAtPause(ports: ReentryPorts, session: HeldSession, checkpoint: RunCheckpoint, pause: StoredPause, prepare: (state: LoopState) => LoopState): void {
  ports.expectPause(pause);
  session.restoreAtPause(checkpoint, prepare, (state) => waitAt(ports.loop, pause.phase, state));
}

/** What a pause phase leads to, as the tool loop goes on from it. */
const AFTER: Readonly<Record<StoredPausePhase, LoopPhase>> = Object.freeze({ after_inference: 'tools', after_tools: 'inference' });

/**
 * The pause a restored run waits at, as the tool loop enters it from a checkpoint whose next phase
 * is that pause: emits the state the resolution leads to. The stored pause's id and deadline come
 * from the runtime's controller (`expectPause`).
 */
function waitAt(ports: ReentryPorts['loop'], phase: StoredPausePhase, state: LoopState): Observable<LoopState> {
  return pauseAt(phase, ports, withNext(state, AFTER[phase]));
}

/**
 * A rebuilt run's state once its pause resolved while hibernated, or before a restart (docs/protocol.md, Durability): the
 * decision applied as the pause would have applied it, and the loop sent on to the phase after the pause, as `waitAt` does.
 */
export function resumeAfter(phase: StoredPausePhase, state: LoopState, decision: PauseDecision): LoopState {
  return applyResolution(phase, withNext(state, AFTER[phase]), decision);
}

/**
 * Whether a stored pause is one its run waits at again (as `pauseAt` decides for a restored pause):
 * with step mode on whatever the filter says now, and without it only where a tool asks for it.
 */
const pausesAgain = (ports: ReentryPorts['loop'], pause: StoredPause): boolean =>
  ports.controller.isEnabled(pause.session_id) || pause.tool_calls.some((call) => call.breakpoint === true);

/** The `log` frame a run re-entered after a restart publishes first (docs/protocol.md, Durability). */
function announceResumed(ports: ReentryPorts['loop'], checkpoint: RunCheckpoint): void {
  const { resolved } = checkpoint;
  const where = resolved ? `past its pause ${resolved.pause_id}, as decided` : `at ${checkpoint.next}`;
  ports.publish(
    eventFrom('log', checkpoint, ports.scheduler.now(), {
      level: 'info',
      message: `run ${checkpoint.inference_id} resumed after a restart ${where}`,
      fields: { resumed: true, next: checkpoint.next, iteration: checkpoint.iteration, ...(resolved ? { decided_pause_id: resolved.pause_id } : {}) },
    }),
  );
}

/** Says the run resumed, and answers the tool calls that were running and may not run twice. */
function reenter(ports: ReentryPorts['loop'], checkpoint: RunCheckpoint, state: LoopState): LoopState {
  const { run } = state;
  const now = ports.scheduler.now();
  announceResumed(ports, checkpoint);
  if (checkpoint.next !== 'tools') return state;
  const registry = registryOf(ports, run);
  const interrupted: Block[] = [];
  for (const block of state.blocks) {
    if (block.kind !== 'tool_call' || !(checkpoint.running_tool_call_ids ?? []).includes(block.payload.id)) continue;
    if (registry.get(block.payload.name)?.idempotent === true) continue;
    const { id, name } = block.payload;
    interrupted.push({ id: `${id}:use`, kind: 'tool_use', role: 'tool', payload: { id, result: null, error: INTERRUPTED } });
    ports.publish(eventFrom('tool-result', run, now, { tool_call_id: id, name, result: null, error: INTERRUPTED }));
  }
  return interrupted.length === 0 ? state : { ...state, blocks: [...state.blocks, ...interrupted] };
}
