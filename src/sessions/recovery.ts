import type { Observable } from 'rxjs';
import type { RunCheckpoint, Store, StoredConversation, StoredPause, StoredPausePhase, StoreSnapshot, UnreadableRow } from '../core/store.js';
import type { Block, Turn } from '../core/turns.js';
import { registryOf, withNext, type LoopPhase, type LoopPorts, type LoopState } from '../operators/loop-state.js';
import { applyResolution, pauseAt } from '../operators/pause-point.js';
import type { PauseDecision } from '../streams/step-commands.js';
import type { EventHub } from '../streams/event-hub.js';
import { eventFrom, type StepwiseEvent } from '../streams/events.js';
import type { HeldSession, SessionChoices } from './session.js';
import { dropUnrestored, failRestore, type RunTarget, type UnrestoredPorts, type UnrestoredRun, type UnrestoredWrites } from './unrestored.js';

/** What `Stepwise.recover` brought back. */
export interface RecoveryReport {
  readonly conversations: number;
  /** Runs re-entered at their checkpoint. */
  readonly runs: number;
  /** Of those, runs paused again with their stored pause id and deadline. */
  readonly pauses: number;
  /** Runs that could not be restored, each ended `failed` (docs/protocol.md, Durability); absent when none. */
  readonly failed?: readonly UnrestoredRun[];
}

export interface RecoverOptions {
  /**
   * A conversation's choices from the profile slug it was started with (its engine, tools and
   * defaults), since a store keeps only the slug. Default: the runtime's engine and tools.
   */
  readonly choicesFor?: (profile: string) => SessionChoices | undefined;
  /**
   * Of the conversations with an unfinished run, those this instance may resume (a service's instance
   * takes each one's lease first, docs/protocol.md, Several instances); the others come back without their run, which their instance
   * executes. Default: every one.
   */
  readonly claim?: (convIds: readonly string[]) => Promise<ReadonlySet<string>>;
}

/** The error a running, non-idempotent tool call gets after a restart (docs/protocol.md, Durability). */
export const INTERRUPTED = 'interrupted: the server stopped while this tool ran';

/** What recovery needs from the runtime: open a session as it was, and pause a run again as it was. */
export interface RecoveryPorts {
  readonly loop: Pick<LoopPorts, 'registry' | 'publish' | 'scheduler' | 'controller'>;
  readonly reopen: (conversation: StoredConversation, choices: SessionChoices | undefined) => HeldSession;
  /** The next pause of this run at this phase takes the stored pause's id and deadline. */
  readonly expectPause: (pause: StoredPause) => void;
  /**
   * With hibernation on: the run comes back hibernated at its stored pause, which is pending again,
   * instead of held at its pause with its state built (docs/protocol.md, Durability).
   */
  readonly restoreHibernated?: (session: HeldSession, checkpoint: RunCheckpoint, pause: StoredPause) => boolean;
  /** What is stored of a run that cannot be restored (./unrestored.ts). */
  readonly unrestored: UnrestoredWrites;
}

/** A snapshot's runs and pauses, looked up by conversation and by run. */
interface Lookups {
  readonly running: ReadonlyMap<string, RunCheckpoint>;
  // By phase and run: a lookup per checkpoint, not a scan of every pause (100 000 paused runs at a restart).
  readonly pauseAt: Readonly<Record<StoredPausePhase, ReadonlyMap<string, StoredPause>>>;
  /** The rows that could not be read back, by conversation. */
  readonly unreadable: ReadonlyMap<string, readonly UnreadableRow[]>;
}

/**
 * Rebuilds every stored conversation's session, then re-enters each unfinished run at the phase its
 * checkpoint names: paused runs pause again with the same id and deadline, runs in inference send it
 * again, and tool calls that were running are answered "interrupted" unless their tool is idempotent.
 * Per run: one whose checkpoint or rows cannot be read back, or that throws while it is re-entered,
 * ends `failed` (./unrestored.ts), and the others come back as they would have.
 */
export function recoverFrom(
  snapshot: StoreSnapshot,
  ports: RecoveryPorts,
  options: RecoverOptions = {},
  mayResume: (convId: string) => boolean = () => true,
): RecoveryReport {
  const lookups = lookupsOf(snapshot);
  const counts = { runs: 0, pauses: 0 };
  const failed: UnrestoredRun[] = [];
  const restored = new Set<string>();
  for (const conversation of snapshot.conversations) {
    restored.add(conversation.conv_id);
    const outcome = restoreConversation(conversation, { ports, options, lookups, mayResume });
    if (outcome === 'paused') counts.pauses += 1;
    if (outcome === 'paused' || outcome === 'resumed') counts.runs += 1;
    else if (typeof outcome === 'object') failed.push(outcome);
  }
  // A run whose conversation's record cannot be read back has no session to end in: its end is stored alone.
  for (const [convId, rows] of lookups.unreadable) {
    const inferenceId = runOf(convId, lookups);
    if (restored.has(convId) || inferenceId === undefined || !mayResume(convId)) continue;
    failed.push(dropUnrestored(unrestoredPorts(ports), runTarget(convId, inferenceId, lookups), (rows[0] as UnreadableRow).error));
  }
  return { conversations: snapshot.conversations.length, ...counts, ...(failed.length > 0 ? { failed } : {}) };
}

function lookupsOf(snapshot: StoreSnapshot): Lookups {
  const running = new Map<string, RunCheckpoint>();
  for (const checkpoint of snapshot.checkpoints) running.set(checkpoint.conv_id, checkpoint);
  const pauseAt: Record<StoredPausePhase, Map<string, StoredPause>> = { after_inference: new Map(), after_tools: new Map() };
  for (const pause of snapshot.pauses) pauseAt[pause.phase].set(pause.inference_id, pause);
  const unreadable = new Map<string, UnreadableRow[]>();
  for (const row of snapshot.unreadable ?? []) {
    const rows = unreadable.get(row.conv_id);
    if (rows) rows.push(row);
    else unreadable.set(row.conv_id, [row]);
  }
  return { running, pauseAt, unreadable };
}

/** The conversation's unfinished run: its checkpoint's, or the one a checkpoint row that cannot be read back names. */
const runOf = (convId: string, { running, unreadable }: Lookups): string | undefined =>
  running.get(convId)?.inference_id ?? unreadable.get(convId)?.find((row) => row.inference_id !== undefined)?.inference_id;

/** What the snapshot holds of a run that cannot be restored: its checkpoint and its stored pauses, read or not. */
function runTarget(convId: string, inferenceId: string, { running, pauseAt, unreadable }: Lookups): RunTarget {
  const pauses = [pauseAt.after_inference.get(inferenceId), pauseAt.after_tools.get(inferenceId)].filter((pause) => pause !== undefined);
  const unreadablePauses = (unreadable.get(convId) ?? []).flatMap((row) => row.pause_id ?? []);
  const checkpoint = running.get(convId);
  return { conv_id: convId, inference_id: inferenceId, pauses, unreadablePauses, ...(checkpoint ? { checkpoint } : {}) };
}

const unrestoredPorts = (ports: RecoveryPorts): UnrestoredPorts => ({ loop: ports.loop, writes: ports.unrestored });

interface RestoreContext {
  readonly ports: RecoveryPorts;
  readonly options: RecoverOptions;
  readonly lookups: Lookups;
  readonly mayResume: (convId: string) => boolean;
}

/** One conversation's session, and its unfinished run re-entered: how it came back, or why it could not. */
function restoreConversation(conversation: StoredConversation, context: RestoreContext): 'idle' | 'resumed' | 'paused' | UnrestoredRun {
  const { ports, options, lookups, mayResume } = context;
  const { conv_id } = conversation;
  const checkpoint = lookups.running.get(conv_id);
  const problems = lookups.unreadable.get(conv_id);
  const inferenceId = runOf(conv_id, lookups);
  let session: HeldSession | undefined;
  try {
    const choices = conversation.profile === undefined ? undefined : options.choicesFor?.(conversation.profile);
    session = ports.reopen(conversation, choices);
    const finished = finishedTurns(conversation.turns, checkpoint);
    if (finished.length > 0) session.restoreTurns(finished);
    if (inferenceId === undefined || !mayResume(conv_id)) return 'idle';
    if (problems) throw new Error((problems.find((row) => row.inference_id !== undefined) ?? (problems[0] as UnreadableRow)).error);
    // Re-entered before the next conversation is reopened: retention makes room by closing idle
    // sessions, never running ones, so past its maxSessions it would close a run not yet resumed.
    return reenterRun(ports, session, checkpoint as RunCheckpoint, lookups);
  } catch (error) {
    // A conversation without a run that could not be reopened: nothing to end, nothing stored changes.
    if (inferenceId === undefined) return 'idle';
    // Thrown once its run was going (its loop subscribed): the run is its own now, and its loop ends it.
    if (session?.running) return 'resumed';
    const target = { ...runTarget(conv_id, inferenceId, lookups), session, turns: conversation.turns, session_id: conversation.session_id };
    return failRestore(unrestoredPorts(ports), target, error);
  }
}

/** A run re-entered at its checkpoint's phase: paused again at its stored pause, or going on. */
function reenterRun(ports: RecoveryPorts, session: HeldSession, checkpoint: RunCheckpoint, { pauseAt }: Lookups): 'resumed' | 'paused' {
  const next = checkpoint.next;
  const pause = isPausePhase(next) ? pauseAt[next].get(checkpoint.inference_id) : undefined;
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

/**
 * The running turn is the checkpoint's: every other stored turn is finished history. The list itself
 * when the run has no turn in it, none when its turn is the only one (a new session has none to replace).
 */
function finishedTurns(turns: readonly Turn[], checkpoint: RunCheckpoint | undefined): readonly Turn[] {
  if (!checkpoint) return turns;
  if (turns.length === 1) return turns[0]?.id === checkpoint.turn_id ? [] : turns;
  return turns.filter((turn) => turn.id !== checkpoint.turn_id);
}

const isPausePhase = (phase: LoopPhase): phase is StoredPausePhase => phase === 'after_inference' || phase === 'after_tools';

/** Held as its pause alone; its loop is built when the pause resolves (or the run is cancelled). */
function restoreAtPause(ports: RecoveryPorts, session: HeldSession, checkpoint: RunCheckpoint, pause: StoredPause, prepare: (state: LoopState) => LoopState): void {
  ports.expectPause(pause);
  session.restoreAtPause(checkpoint, prepare, (state) => waitAt(ports.loop, pause.phase, state));
}

/** What bringing a snapshot back needs besides recovery's ports: the hub, whose seq goes on from the stored log. */
export interface RestorePorts extends RecoveryPorts {
  readonly hub: Pick<EventHub, 'lastSeq' | 'seed'>;
}

/** Brings back what a snapshot holds (all of a store at a restart, one conversation at a takeover). */
export async function restoreSnapshot(snapshot: StoreSnapshot, ports: RestorePorts, options: RecoverOptions = {}): Promise<RecoveryReport> {
  // seq goes on from the stored log (docs/protocol.md, Durability), set before recovery publishes anything.
  for (const { conv_id, last_seq } of snapshot.conversations) if (last_seq > ports.hub.lastSeq(conv_id)) ports.hub.seed(conv_id, last_seq);
  // A run whose checkpoint cannot be read back is claimed too: this instance then ends it failed.
  const unfinished = [...snapshot.checkpoints, ...(snapshot.unreadable ?? []).filter((row) => row.inference_id !== undefined)].map((row) => row.conv_id);
  const claimed = options.claim ? await options.claim(unfinished) : undefined;
  return recoverFrom(snapshot, ports, options, claimed ? (convId) => claimed.has(convId) : undefined);
}

/** One conversation's unfinished run brought back from the store as `restoreSnapshot` would (a takeover). */
export async function takeOverConversation(store: Store, convId: string, ports: RestorePorts, options?: RecoverOptions): Promise<RecoveryReport> {
  return restoreSnapshot(await store.load(convId), ports, options);
}

/**
 * The inferences a run had done when it resumed after a restart, read from the `log` event it
 * publishes first (undefined for any other event): its next model message is the one after them.
 */
export function resumedIteration(event: StepwiseEvent): number | undefined {
  if (event.type !== 'log' || event.fields?.['resumed'] !== true) return undefined;
  const iteration = event.fields['iteration'];
  return typeof iteration === 'number' ? iteration : undefined;
}

/** What a pause phase leads to, as the tool loop goes on from it. */
const AFTER: Readonly<Record<StoredPausePhase, LoopPhase>> = Object.freeze({ after_inference: 'tools', after_tools: 'inference' });

/**
 * The pause a restored run waits at, as the tool loop enters it from a checkpoint whose next phase
 * is that pause: emits the state the resolution leads to. The stored pause's id and deadline come
 * from the runtime's controller (`expectPause`).
 */
function waitAt(ports: RecoveryPorts['loop'], phase: StoredPausePhase, state: LoopState): Observable<LoopState> {
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
const pausesAgain = (ports: RecoveryPorts['loop'], pause: StoredPause): boolean =>
  ports.controller.isEnabled(pause.session_id) || pause.tool_calls.some((call) => call.breakpoint === true);

/** The `log` frame a run re-entered after a restart publishes first (docs/protocol.md, Durability). */
function announceResumed(ports: RecoveryPorts['loop'], checkpoint: RunCheckpoint): void {
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
function reenter(ports: RecoveryPorts['loop'], checkpoint: RunCheckpoint, state: LoopState): LoopState {
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
