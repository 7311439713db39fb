import type { RunCheckpoint, Store } from '../core/store.js';
import type { EventHub } from '../streams/event-hub.js';
import type { PauseInfo } from '../streams/events.js';
import type { FrameLog } from '../streams/frame-log.js';
import type { PauseResolution } from '../streams/step-commands.js';
import type { Hibernator, StepControllerPorts } from '../streams/controller-settings.js';
import { pauseChecks } from '../operators/pause-point.js';
import { resumeAfter } from './recovery.js';
import type { HeldSession } from './session.js';
import type { SliceQueue } from './slice-queue.js';

/** What hibernation needs: the stored checkpoints and the session; the controller keeping the pause comes with each. */
export interface HibernationPorts {
  readonly store: Pick<Store, 'checkpoints' | 'forget'>;
  /** The conversation's session held here; undefined for one that is not. */
  readonly sessionOf: (convId: string) => HeldSession | undefined;
  /** Where the conversation's frames are buffered for replay; the store has them too. */
  readonly hub: Pick<EventHub, 'isWatched' | 'lastSeq' | 'forget' | 'seed'>;
  readonly frames: Pick<FrameLog, 'isWatched' | 'forget'>;
  /** Where a pause waits to hibernate, and a resolved pause's run to be rebuilt after its resolution was published. */
  readonly slices: Pick<SliceQueue, 'push'>;
}

/**
 * The controller's `hibernate` port (docs/protocol.md, Durability): a pause still pending after `hibernateAfterMs` gives
 * up its run's loop. Its run's checkpoint at that pause is read from the store first; the pause then
 * stays pending in the controller (every listing, command and its deadline see it as before), and the
 * session keeps the run as a `HibernatedRun` (./active-run.ts): no checkpoint with a store that reads it
 * back at once, compact text otherwise. When the pause resolves the run is rebuilt from the
 * checkpoint as recovery rebuilds one (docs/protocol.md, Durability), without recovery's `log` frame:
 * for everyone watching, the run never stopped.
 *
 * A pause with no matching stored checkpoint (not committed yet, or a store that keeps none) stays
 * resident: hibernating it would lose the state the run goes on from.
 */
export function createHibernation(ports: HibernationPorts): Hibernation {
  const wake = wakeOf(ports);
  return {
    // Queued: many pauses come due together, and a SQLite read is synchronous.
    hibernate: (pause, controller) => ports.slices.push(() => readAndHibernate(ports, controller, pause, wake)),
    restoreHibernated: (controller, session, checkpoint, pause) => restoreHibernated(ports, controller, session, checkpoint, pause, wake),
  };
}

type Wake = (resolution: PauseResolution) => void;

export interface Hibernation {
  /** The controller's `hibernate` port. */
  readonly hibernate: (pause: PauseInfo, controller: Hibernator) => void;
  /**
   * Recovery's way back for a paused run (docs/protocol.md, Durability): its stored pause pending
   * again and the run hibernated at it from the start, with the checkpoint recovery read, so a restart
   * builds none of its paused runs, however many, and reads no checkpoint twice.
   */
  readonly restoreHibernated: (controller: Hibernator, session: HeldSession, checkpoint: RunCheckpoint, pause: PauseInfo) => boolean;
}

/** False when the controller cannot: the caller restores the run another way. */
function restoreHibernated(ports: HibernationPorts, controller: Hibernator, session: HeldSession, checkpoint: RunCheckpoint, pause: PauseInfo, wake: Wake): boolean {
  const checks = pauseChecks(pause.phase, session.registry(), checkpoint);
  const held = controller.restoreHibernated(pause, checks, wake);
  if (!held) return false;
  session.restoreHibernated(checkpoint, held);
  // Once the frames it published (`log`, `paused`) are committed: the buffer goes as a hibernating run's does.
  ports.slices.push(() => releaseBuffer(ports, pause.conv_id));
  return true;
}

/**
 * Every hibernated run's wake, one function for all of them (a closure per pause cost heap for as long
 * as it waited): the run of the resolved pause's session rebuilt, queued once the resolution is
 * committed (the controller waits for that). A session closed since has cancelled its pause, so the
 * session found is the one whose run waits at it. A run that cannot be rebuilt from its stored
 * checkpoint ends `failed` in `HeldSession.wake`, which never throws into the slice queue.
 */
const wakeOf = (ports: HibernationPorts): Wake => (resolution) => {
  const { pause, decision } = resolution;
  const session = ports.sessionOf(pause.conv_id);
  if (session?.session_id !== pause.session_id) return;
  ports.slices.push(() => session.wake((state) => resumeAfter(pause.phase, state, decision)));
};

function readAndHibernate(ports: HibernationPorts, controller: Hibernator, pause: PauseInfo, wake: Wake): void {
  ports.store
    .checkpoints(pause.conv_id)
    .then((checkpoints) => {
      const checkpoint = checkpoints.find((candidate) => isAt(candidate, pause));
      if (checkpoint) hibernate(ports, controller, pause, checkpoint, wake);
    })
    // A store that cannot answer now, or a checkpoint it cannot read back: the run stays resident,
    // which is only costlier. Caught here: a rejection nobody handles ends a Node process.
    .catch(() => undefined);
}

const isAt = (checkpoint: RunCheckpoint, pause: PauseInfo): boolean =>
  checkpoint.inference_id === pause.inference_id && checkpoint.next === pause.phase;

function hibernate(ports: HibernationPorts, controller: Hibernator, pause: PauseInfo, checkpoint: RunCheckpoint, wake: Wake): void {
  const session = ports.sessionOf(pause.conv_id);
  // Resolved, cancelled or closed while the store was read: the run is no longer waiting at it.
  if (!session?.running || controller.get(pause.pause_id) === undefined) return;
  const held = controller.hibernate(pause.pause_id, wake);
  if (!held) return;
  session.hibernate(checkpoint, held);
  releaseBuffer(ports, pause.conv_id);
  // Its writes' caches too: the run writes nothing until it wakes, which may be days.
  ports.store.forget?.(pause.conv_id);
}

/**
 * A conversation no client follows gives up its replay buffer, as a closed one does: replay and
 * `/hydrate` read the store's log (docs/protocol.md, Durability), and seq goes on from where it was.
 * A followed one keeps it: someone is watching, and such conversations are few.
 */
function releaseBuffer({ hub, frames }: HibernationPorts, convId: string): void {
  if (hub.isWatched(convId) || frames.isWatched(convId)) return;
  const lastSeq = hub.lastSeq(convId);
  hub.forget(convId);
  frames.forget(convId);
  // A hub that reads seqs from the store keeps no entry at all.
  if (hub.lastSeq(convId) !== lastSeq) hub.seed(convId, lastSeq);
}

/** When a pause hibernates its run, and who does it: what the runtime's controller is built with. */
export interface HibernationSetting {
  readonly hibernate: NonNullable<StepControllerPorts['hibernate']>;
  /** Undefined: never. */
  readonly hibernateAfterMs: number | undefined;
}

/** Hibernation's delay (docs/protocol.md, Durability): the configured one, else 2 000 ms with a durable store; undefined: off. */
export function hibernateAfterOf(config: { readonly hibernateAfterMs?: number }, store: Pick<Store, 'durable'>): number | undefined {
  const after = config.hibernateAfterMs ?? (store.durable ? DEFAULT_HIBERNATE_AFTER_MS : Infinity);
  return after === Infinity ? undefined : after;
}

const DEFAULT_HIBERNATE_AFTER_MS = 2_000;
