import type { JsonValue, ForkOrigin, RunCheckpoint, Store } from '../core/store.js';
import type { Turn } from '../core/turns.js';
import type { LoopPorts, LoopState } from '../operators/loop-state.js';
import { eventFrom } from '../streams/events.js';
import type { StepController } from '../streams/step-controller.js';
import type { HeldSession, Session, SessionChoices } from './session.js';

/** Where to fork a conversation (docs/protocol.md, Forks): at most one of `turn_id` and `pause_id`; neither is the whole history. */
export interface ForkRequest {
  readonly source: Session;
  /** The copy ends with this finished turn (inclusive). */
  readonly turn_id?: string;
  /** The copy ends at this pending pause's checkpoint, its run paused there again in the fork. */
  readonly pause_id?: string;
  /** The fork's owner (the caller). Default none (single-user). */
  readonly owner?: string;
  /** The fork's engine and tools: the source's profile's. Default the runtime's. */
  readonly choices?: SessionChoices;
}

export interface ForkResult {
  readonly session: Session;
  /** The fork's pause, when forked at a pause: a new id, the same phase and tool calls. */
  readonly pause_id?: string;
}

export type ForkErrorCode = 'unknown_turn' | 'turn_running' | 'unknown_pause' | 'pause_resolved';

/** A fork refused; `code` says why (the server maps it to 404 or 409). */
export class ForkError extends Error {
  override readonly name = 'ForkError';
  constructor(
    readonly code: ForkErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** What a fork needs from the runtime: the same pieces recovery uses to re-enter a run at a checkpoint. */
export interface ForkPorts {
  readonly loop: Pick<LoopPorts, 'publish' | 'scheduler' | 'ids'>;
  readonly controller: Pick<StepController, 'get' | 'convOf' | 'isEnabled' | 'filterOf' | 'enable' | 'pending'>;
  readonly store: Pick<Store, 'checkpoints' | 'engineState' | 'putTurn' | 'putEngineState' | 'flush'>;
  /** Takes the fork's run for this process before anything of it is written (its writes are fenced). */
  readonly claim: (convId: string) => Promise<boolean>;
  /** Opens a new conversation (a new id) for this owner, origin and choices, and stores its record. */
  readonly open: (identity: { readonly owner?: string; readonly forked_from: ForkOrigin }, choices: SessionChoices | undefined) => HeldSession;
  /** Puts an engine state back for a conversation (the engine of `choices`, else the runtime's). */
  readonly restoreEngine: (convId: string, state: JsonValue, choices: SessionChoices | undefined) => void;
}

/**
 * Forks a conversation: a new one whose history is a copy of the source's up to a turn, or up to a
 * pending pause's checkpoint with that run re-entered there (as recovery does after a restart), so it
 * pauses again at the same phase with the same tool calls under a new pause id, decisions not yet
 * taken. The source is not touched. The fork keeps the source's step mode and, where it is exact (at
 * a pause, or at the source's last turn), the engine's per-conversation state.
 */
export async function forkConversation(ports: ForkPorts, request: ForkRequest): Promise<ForkResult> {
  const { source } = request;
  if (request.pause_id !== undefined && request.turn_id !== undefined) throw new TypeError('forkConversation: give turn_id or pause_id, not both');
  if (request.pause_id !== undefined) return forkAtPause(ports, request, request.pause_id);
  const turns = source.turns();
  const finished = source.running ? turns.slice(0, -1) : turns;
  let copied = finished;
  if (request.turn_id !== undefined) {
    const index = turns.findIndex((turn) => turn.id === request.turn_id);
    if (index < 0) throw new ForkError('unknown_turn', `conversation ${source.conv_id} has no turn "${request.turn_id}"`);
    if (index >= finished.length) throw new ForkError('turn_running', `turn "${request.turn_id}" is still running: fork at one of its pauses, or once it ended`);
    copied = finished.slice(0, index + 1);
  }
  // The engine's state is the source's latest: it fits the fork only when the copy ends where the source is.
  const exact = !source.running && copied.length === turns.length;
  const engineState = exact ? await ports.store.engineState(source.conv_id) : undefined;
  const origin: ForkOrigin = { conv_id: source.conv_id, ...(request.turn_id === undefined ? {} : { turn_id: request.turn_id }) };
  const fork = await openFork(ports, request, origin, copied, engineState);
  // Committed before anyone is told of it: a fork acknowledged is a fork that survives a crash.
  await ports.store.flush();
  return { session: fork };
}

async function forkAtPause(ports: ForkPorts, request: ForkRequest, pauseId: string): Promise<ForkResult> {
  const { source } = request;
  const pending = (): boolean => ports.controller.get(pauseId)?.conv_id === source.conv_id;
  const pause = ports.controller.get(pauseId);
  if (!pause || pause.conv_id !== source.conv_id) {
    if (ports.controller.convOf(pauseId) === source.conv_id) throw resolved(pauseId);
    throw new ForkError('unknown_pause', `conversation ${source.conv_id} has no pause "${pauseId}"`);
  }
  const [checkpoints, engineState] = await Promise.all([ports.store.checkpoints(source.conv_id), ports.store.engineState(source.conv_id)]);
  const checkpoint = checkpoints.find((candidate) => candidate.inference_id === pause.inference_id);
  // Resolved while the store was read: the checkpoint has moved on to the next phase.
  if (!pending() || checkpoint?.next !== pause.phase) throw resolved(pauseId);
  const history = source.turns().filter((turn) => turn.id !== checkpoint.turn_id);
  const fork = await openFork(ports, request, { conv_id: source.conv_id, pause_id: pauseId }, history, engineState);
  const now = ports.loop.scheduler.now();
  const inference_id = ports.loop.ids.next('inf');
  const rerun: RunCheckpoint = { ...checkpoint, conv_id: fork.conv_id, session_id: fork.session_id, inference_id, at_ms: now };
  fork.resume(rerun, (state: LoopState) => {
    // A new run of the fork's own: dashboards on the fork see it start, then pause.
    ports.loop.publish(eventFrom('run-started', state.run, now, {}));
    ports.loop.publish(
      eventFrom('log', state.run, now, {
        level: 'info',
        message: `forked from ${source.conv_id} at pause ${pauseId} (${pause.phase})`,
        // How many of the turn's blocks are the copy (a dashboard draws them, since their frames are the source's).
        fields: { conv_id: source.conv_id, pause_id: pauseId, next: checkpoint.next, copied_blocks: checkpoint.blocks.length },
      }),
    );
    return state;
  });
  // The re-entered run pauses at once (the loop subscribes synchronously), under a new id.
  const again = ports.controller.pending(fork.session_id).find((candidate) => candidate.inference_id === inference_id);
  await ports.store.flush();
  return { session: fork, ...(again ? { pause_id: again.pause_id } : {}) };
}

/** The new conversation with the copied turns, stored, with the source's step mode and engine state. */
async function openFork(ports: ForkPorts, request: ForkRequest, origin: ForkOrigin, turns: readonly Turn[], engineState: JsonValue | undefined): Promise<HeldSession> {
  const { source, choices } = request;
  const fork = ports.open({ ...(request.owner === undefined ? {} : { owner: request.owner }), forked_from: origin }, choices);
  // A new id nobody else knows: the claim only takes its lease, so the fork's writes pass the fence.
  await ports.claim(fork.conv_id);
  fork.restoreTurns(turns);
  for (const turn of turns) ports.store.putTurn(fork.conv_id, turn);
  if (engineState !== undefined) {
    ports.restoreEngine(fork.conv_id, engineState, choices);
    ports.store.putEngineState(fork.conv_id, engineState);
  }
  if (ports.controller.isEnabled(source.session_id)) ports.controller.enable(fork.session_id, ports.controller.filterOf(source.session_id));
  return fork;
}

const resolved = (pauseId: string): ForkError =>
  new ForkError('pause_resolved', `pause "${pauseId}" was already resolved: its checkpoint is gone (fork at a turn instead)`);
