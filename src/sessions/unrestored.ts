import type { RunCheckpoint, StoredPause, StoredPausePhase } from '../core/store.js';
import type { Block, Turn } from '../core/turns.js';
import type { LoopPorts } from '../operators/loop-state.js';
import { eventFrom, type EventOrigin } from '../streams/events.js';
import type { PauseResolution } from '../streams/step-commands.js';
import { failedAt, type RunResult } from './run.js';
import type { HeldSession } from './session.js';

/**
 * Recovery is per run (docs/protocol.md, Durability): a run whose checkpoint or rows cannot be read
 * back, or that throws while it is resumed or woken, ends `failed` with a `log` frame saying why,
 * and its end is stored as any run's (its checkpoint gone), so the next start does not try it again.
 * Every other run, and the server, go on.
 */

/** A run that could not be restored, as `RecoveryReport.failed` lists it. */
export interface UnrestoredRun {
  readonly conv_id: string;
  readonly inference_id: string;
  /** Why: what its `log` frame and its `run.end` error say. */
  readonly error: string;
}

/** What is stored of a run that could not be restored, through the runtime's write gate. */
export interface UnrestoredWrites {
  /** The run ended: its final turn stored, its checkpoint deleted (as any run's end). */
  readonly ended: (result: RunResult) => void;
  /** A stored pause of the run resolved `cancelled` by `system`: its decision row, and it is no longer pending. */
  readonly resolved: (resolution: PauseResolution) => void;
  /** The checkpoint of a run whose conversation cannot be read back: deleted (nothing else of it can be written). */
  readonly dropped: (convId: string, inferenceId: string) => void;
}

type Announce = Pick<LoopPorts, 'publish' | 'scheduler'>;

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Ends a run that could not be restored: its `log` frame at level error naming the run and why, then
 * `between` (its stored pauses resolved), then `run-ended` as failed. Its turn is what could be read of
 * it (`blocks`), or none: a turn that cannot be read back is stored again as one that can.
 */
export function endUnrestored(ports: Announce, run: EventOrigin, error: unknown, blocks: () => readonly Block[] | undefined, between?: () => void): RunResult {
  const reason = messageOf(error);
  const message = `run ${run.inference_id} could not be restored from the store: ${reason}`;
  ports.publish(eventFrom('log', run, ports.scheduler.now(), { level: 'error', message, fields: { restore_failed: true } }));
  between?.();
  return failedAt(ports, run, readable(blocks), `the run could not be restored from the store: ${reason}`);
}

function readable(blocks: () => readonly Block[] | undefined): readonly Block[] {
  try {
    return blocks() ?? [];
  } catch {
    return [];
  }
}

/** A run recovery could not restore: its ids, and what the snapshot holds of it. */
export interface RunTarget {
  readonly conv_id: string;
  readonly inference_id: string;
  /** Its checkpoint, when it could be read. */
  readonly checkpoint?: RunCheckpoint;
  /** Its stored pauses, and the ids of those that cannot be read back. */
  readonly pauses: readonly StoredPause[];
  readonly unreadablePauses: readonly string[];
}

/** A run recovery could not restore, in the conversation it came back with. */
export interface UnrestoredTarget extends RunTarget {
  /** Its conversation's session, when it could be reopened (idle: the run is not in it). */
  readonly session: HeldSession | undefined;
  /** Its conversation's stored turns; the run's is the checkpoint's, else the last. */
  readonly turns: readonly Turn[];
  /** Its session's id, from its conversation's record. */
  readonly session_id: string;
}

/** What recovery ends an unrestored run with: the loop's publish and clock, and its writes. */
export interface UnrestoredPorts {
  readonly loop: Announce;
  readonly writes: UnrestoredWrites;
}

/**
 * Ends a run recovery could not restore (see `endUnrestored`): its stored pauses resolve `cancelled`
 * (`debugger.resume` and a decision row, as for a paused run cancelled), its session keeps the turns
 * the store has and the run's final one, and its end is stored.
 */
export function failRestore(ports: UnrestoredPorts, target: UnrestoredTarget, error: unknown): UnrestoredRun {
  const { conv_id, inference_id, session, checkpoint, turns } = target;
  const turnId = checkpoint?.turn_id ?? turns.at(-1)?.id ?? '';
  const run: EventOrigin = { conv_id, session_id: checkpoint?.session_id ?? target.session_id, inference_id, turn_id: turnId };
  const stored = turns.find((turn) => turn.id === turnId);
  const result = endUnrestored(ports.loop, run, error, () => checkpoint?.blocks ?? stored?.blocks, () => {
    for (const pause of pausesOf(target, run)) resolveCancelled(ports, pause);
  });
  // Only an idle session takes turns: one whose run was started before it threw keeps that run's.
  if (session && !session.running) session.restoreTurns([...turns.filter((turn) => turn.id !== turnId), result.turn]);
  ports.writes.ended(result);
  return { conv_id, inference_id, error: messageOf(error) };
}

/**
 * Ends a run whose conversation's record cannot be read back: its conversation is not restored, so
 * there is no session to end it in and nobody to tell; its end is stored alone (its checkpoint
 * deleted, its stored pauses resolved `cancelled`), so the next start does not try it again.
 */
export function dropUnrestored(ports: UnrestoredPorts, target: RunTarget, error: string): UnrestoredRun {
  const { conv_id, inference_id, checkpoint } = target;
  const run: EventOrigin = { conv_id, inference_id, session_id: checkpoint?.session_id ?? '', turn_id: checkpoint?.turn_id ?? '' };
  for (const pause of pausesOf(target, run)) resolveCancelled(ports, pause, false);
  ports.writes.dropped(conv_id, inference_id);
  return { conv_id, inference_id, error };
}

/** A stored pause resolved `cancelled` by `system`, as a cancelled paused run's is (`said`: with its `debugger.resume`). */
function resolveCancelled(ports: UnrestoredPorts, pause: StoredPause, said = true): void {
  ports.writes.resolved({ pause, reason: 'cancelled', decision: { action: 'continue' }, by: 'system' });
  if (said) ports.loop.publish(eventFrom('resumed', pause, ports.loop.scheduler.now(), { pause_id: pause.pause_id, reason: 'cancelled', by: 'system' }));
}

/** The run's pauses: those read back, and those that could not be, as their ids and the run's say them. */
function pausesOf(target: RunTarget, run: EventOrigin): StoredPause[] {
  const next = target.checkpoint?.next;
  const phase: StoredPausePhase = next === 'after_tools' ? 'after_tools' : 'after_inference';
  const unread = target.unreadablePauses.map((pause_id): StoredPause => ({ ...run, pause_id, phase, summary: '', deadline_ms: 0, tool_calls: [] }));
  return [...target.pauses, ...unread];
}
