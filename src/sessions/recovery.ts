import type { RunCheckpoint, Store, StoredConversation, StoredPause, StoredPausePhase, StoreSnapshot, UnreadableRow } from '../core/store.js';
import type { Turn } from '../core/turns.js';
import type { EventHub } from '../streams/event-hub.js';
import { reenterRun, type PausesByPhase, type ReentryPorts } from './reentry.js';
import type { HeldSession, SessionChoices } from './session.js';
import { dropUnrestored, failRestore, type RunTarget, type UnrestoredPorts, type UnrestoredRun, type UnrestoredWrites } from './unrestored.js';

export { INTERRUPTED, resumeAfter } from './reentry.js';

/**
 * A snapshot of the store brought back (docs/protocol.md, Durability): every conversation's session
 * reopened, and each unfinished run re-entered at its checkpoint (./reentry.ts), or, when it cannot
 * be, ended `failed` on its own (./unrestored.ts).
 */

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

/** What recovery needs from the runtime: open a session as it was, and pause a run again as it was (./reentry.ts). */
export interface RecoveryPorts extends ReentryPorts {
  readonly reopen: (conversation: StoredConversation, choices: SessionChoices | undefined) => HeldSession;
  /** What is stored of a run that cannot be restored (./unrestored.ts). */
  readonly unrestored: UnrestoredWrites;
}

/** A snapshot's runs and pauses, looked up by conversation and by run. */
interface Lookups {
  readonly running: ReadonlyMap<string, RunCheckpoint>;
  readonly pauseAt: PausesByPhase;
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
  const context: RestoreContext = { ports, options, lookups, mayResume };
  for (const conversation of snapshot.conversations) {
    const outcome = restoreConversation(conversation, context);
    if (outcome === 'paused') counts.pauses += 1;
    if (outcome === 'paused' || outcome === 'resumed') counts.runs += 1;
    else if (typeof outcome === 'object') failed.push(outcome);
  }
  // A run whose conversation's record cannot be read back has no session to end in: its end is stored alone.
  // The conversations restored are listed only then: a restart with every row readable, the rule, needs no such list.
  const restored = lookups.unreadable.size > 0 ? new Set(snapshot.conversations.map(({ conv_id }) => conv_id)) : undefined;
  for (const [convId, rows] of lookups.unreadable) {
    const inferenceId = runOf(convId, lookups);
    if (restored?.has(convId) || inferenceId === undefined || !mayResume(convId)) continue;
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
const runOf = (convId: string, { running, unreadable }: Lookups): string | undefined => runIn(running.get(convId), unreadable.get(convId));

const runIn = (checkpoint: RunCheckpoint | undefined, problems: readonly UnreadableRow[] | undefined): string | undefined =>
  checkpoint?.inference_id ?? problems?.find((row) => row.inference_id !== undefined)?.inference_id;

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
  const inferenceId = runIn(checkpoint, problems);
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
    return reenterRun(ports, session, checkpoint as RunCheckpoint, lookups.pauseAt);
  } catch (error) {
    // A conversation without a run that could not be reopened: nothing to end, nothing stored changes.
    if (inferenceId === undefined) return 'idle';
    // Thrown once its run was going (its loop subscribed): the run is its own now, and its loop ends it.
    if (session?.running) return 'resumed';
    const target = { ...runTarget(conv_id, inferenceId, lookups), session, turns: conversation.turns, session_id: conversation.session_id };
    return failRestore(unrestoredPorts(ports), target, error);
  }
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

/** What bringing a snapshot back needs besides recovery's ports: the hub, whose seq goes on from the stored log. */
export interface RestorePorts extends RecoveryPorts {
  readonly hub: Pick<EventHub, 'lastSeq' | 'seed'>;
}

/** Brings back what a snapshot holds (all of a store at a restart, one conversation at a takeover). */
export async function restoreSnapshot(snapshot: StoreSnapshot, ports: RestorePorts, options: RecoverOptions = {}): Promise<RecoveryReport> {
  // seq goes on from the stored log (docs/protocol.md, Durability), set before recovery publishes anything.
  for (const { conv_id, last_seq } of snapshot.conversations) if (last_seq > ports.hub.lastSeq(conv_id)) ports.hub.seed(conv_id, last_seq);
  const claimed = options.claim ? await options.claim(unfinishedIn(snapshot)) : undefined;
  return recoverFrom(snapshot, ports, options, claimed ? (convId) => claimed.has(convId) : undefined);
}

/** The conversations with an unfinished run; one whose checkpoint cannot be read back too, as this instance then ends it failed. */
const unfinishedIn = (snapshot: StoreSnapshot): string[] =>
  [...snapshot.checkpoints, ...(snapshot.unreadable ?? []).filter((row) => row.inference_id !== undefined)].map((row) => row.conv_id);

/** One conversation's unfinished run brought back from the store as `restoreSnapshot` would (a takeover). */
export async function takeOverConversation(store: Store, convId: string, ports: RestorePorts, options?: RecoverOptions): Promise<RecoveryReport> {
  return restoreSnapshot(await store.load(convId), ports, options);
}
