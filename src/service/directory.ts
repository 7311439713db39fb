import type { Observable } from 'rxjs';
import type { ConversationDirectory, ConversationSummary, ListedPause, PauseFeedFrame } from '../core/directory.js';
import type { ConversationRecord, FrameEvent, Store } from '../core/store.js';
import { StoreUnavailableError } from '../core/store-errors.js';
import type { Stepwise } from '../sessions/runtime.js';
import type { InstanceStore } from './instance.js';
import { soonestStoredPauses } from './soonest-pauses.js';
import { wirePause } from './wire-pause.js';

export interface ServiceDirectoryPorts {
  readonly stepwise: Pick<Stepwise, 'sessions' | 'controller'>;
  /** This instance's own view: its sessions and its controller's pauses. */
  readonly local: ConversationDirectory;
  readonly store: Store<FrameEvent> & Pick<InstanceStore, 'pausesByDeadline'>;
  /** Makes a conversation another instance created known here (./adopt.ts). */
  readonly join: (convId: string) => Promise<void>;
  /** Every instance's pause and resume frames (./pause-feed.ts). */
  readonly pauseFrames$: Observable<PauseFeedFrame>;
}

/**
 * The directory as the whole service's (docs/protocol.md, Several instances):
 * - every instance's conversations come from the store; a run is in progress when it has a
 *   checkpoint there, wherever it executes;
 * - a conversation whose run does not execute here is shown as stored (a session adopted here
 *   earlier holds the turns of then; the instance that runs it goes on storing them);
 * - one conversation's pauses are this instance's, then the store's that it does not hold; the
 *   whole service's come from the store's deadline index once this instance's are committed;
 * - `open` brings the conversation here first (its session and seq).
 * A store that cannot be read rejects with `store_unavailable` (a 503 for the routes).
 */
export function createServiceDirectory(ports: ServiceDirectoryPorts): ConversationDirectory {
  const { stepwise, local, store } = ports;
  const runningHere = (convId: string): boolean => stepwise.sessions.get(convId)?.running === true;
  const stepModeOf = (record: ConversationRecord): boolean => {
    // The controller stores every change of a session here; another instance's are as stored.
    const session = stepwise.sessions.get(record.conv_id);
    return session?.running ? stepwise.controller.isEnabled(session.session_id) : record.step.enabled;
  };
  return {
    list: () =>
      reading(async () => {
        const [records, checkpoints] = await Promise.all([store.conversations(), store.checkpoints()]);
        const unfinished = new Set(checkpoints.map((checkpoint) => checkpoint.conv_id));
        return records.map((record) => summaryOf(record, runningHere(record.conv_id) || unfinished.has(record.conv_id), stepModeOf(record)));
      }),
    get: (convId) =>
      reading(async () => {
        if (runningHere(convId)) return local.get(convId);
        const [record, turns, pauses, checkpoints] = await Promise.all([store.conversation(convId), store.turns(convId), store.pauses(convId), store.checkpoints(convId)]);
        if (!record) return local.get(convId);
        const { created_at: _listedOnly, ...identity } = summaryOf(record, checkpoints.length > 0, stepModeOf(record));
        return {
          ...identity,
          ...(record.step.filter ? { step_filter: record.step.filter } : {}),
          turns: turns.map((turn) => ({ id: turn.id, blocks: turn.blocks })),
          pending_pauses: pauses.map(wirePause),
        };
      }),
    pauses: (convId) =>
      reading(async () => {
        // The whole service's from the deadline index, with only their conversations' records.
        if (convId === undefined) return soonestStoredPauses(store, () => true, Number.POSITIVE_INFINITY);
        await ports.join(convId);
        const here = await local.pauses(convId);
        // This instance's pauses as listed now; the store flushed after, so they are committed too.
        await store.flush();
        const [stored, record] = await Promise.all([store.pauses(convId), store.conversation(convId)]);
        if (!record) return here;
        const known = new Set(here.map(({ pause }) => pause.pause_id));
        const elsewhere = stored.filter((pause) => !known.has(pause.pause_id));
        return [...here, ...elsewhere.map((pause): ListedPause => ({ pause: wirePause(pause), owner: record.owner, profile: record.profile ?? null }))];
      }),
    soonestPauses: (shown, limit) => reading(() => soonestStoredPauses(store, shown, limit)),
    pauseFrames$: ports.pauseFrames$,
    open: (convId) => reading(() => ports.join(convId)),
  };
}

/** A store read on a request's path: failing, it is the store being unreachable. */
async function reading<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    throw new StoreUnavailableError('redis', 'the service', (error as Error).message);
  }
}

function summaryOf(record: ConversationRecord, running: boolean, stepMode: boolean): ConversationSummary {
  return {
    conv_id: record.conv_id,
    session_id: record.session_id,
    ...(record.owner === undefined ? {} : { owner: record.owner }),
    running,
    step_mode: stepMode,
    created_at: record.created_at,
    profile: record.profile ?? null,
    ...(record.forked_from ? { forked_from: record.forked_from } : {}),
  };
}
