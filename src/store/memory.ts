import { EMPTY } from 'rxjs';
import type { ConversationRecord, FrameEvent, FramePage, RunCheckpoint, Store, StoredPause, StoreRetentionConfig } from '../core/store.js';
import { StoreClosedError } from '../core/store-errors.js';
import { createMemoryGrants } from './memory-grants.js';
import { createMemoryWrites, type MemoryTables } from './memory-writes.js';
import { resolveRetention } from './retention.js';

/** Options of the memory store. */
export type MemoryStoreConfig = StoreRetentionConfig;

/**
 * The memory store: today's behaviour, nothing survives the process. Writes apply at once, so
 * `appendFrames` completes synchronously and the hub keeps its timing. Values are kept by reference
 * (they are immutable by convention), which is what makes it as cheap as having no store.
 */
export function createMemoryStore<E extends FrameEvent = FrameEvent>(config: MemoryStoreConfig = {}): Store<E> {
  const retention = resolveRetention(config, 'createMemoryStore');
  const tables: MemoryTables<E> = { rows: new Map(), pauses: new Map() };
  let closed = false;
  const writable = (): void => {
    if (closed) throw new StoreClosedError('memory');
  };
  return {
    kind: 'memory',
    durable: false,
    grants: createMemoryGrants(),
    ...createMemoryWrites(tables, retention, writable),
    flush: () => Promise.resolve(),
    committed$: () => EMPTY,
    ...createMemoryReads(tables),
    close: async () => {
      closed = true;
    },
  };
}

type MemoryReads<E extends FrameEvent> = Pick<
  Store<E>,
  'load' | 'conversation' | 'conversations' | 'turns' | 'frames' | 'lastSeq' | 'pauses' | 'decisions' | 'checkpoints' | 'engineState'
>;

/** The port's reads, straight from the tables (copies of their lists, so a reader never sees later writes). */
function createMemoryReads<E extends FrameEvent>({ rows, pauses }: MemoryTables<E>): MemoryReads<E> {
  const records = (): ConversationRecord[] =>
    [...rows.values()].flatMap((row) => (row.record ? [row.record] : [])).sort((a, b) => a.created_at - b.created_at);
  const pausesOf = (convId?: string): StoredPause[] =>
    [...pauses.values()].filter((pause) => convId === undefined || pause.conv_id === convId);
  const checkpointsOf = (convId?: string): RunCheckpoint[] =>
    convId === undefined ? [...rows.values()].flatMap((row) => row.checkpoints) : [...(rows.get(convId)?.checkpoints ?? [])];
  return {
    load: async (convId) => ({
      conversations: records().flatMap((record) => {
        if (convId !== undefined && record.conv_id !== convId) return [];
        const row = rows.get(record.conv_id);
        if (!row) return [];
        const engine = row.engineState === undefined ? {} : { engine_state: row.engineState };
        return [{ ...record, turns: [...row.turns], last_seq: row.lastSeq, ...engine }];
      }),
      pauses: pausesOf(convId),
      checkpoints: checkpointsOf(convId),
    }),
    conversation: async (convId) => rows.get(convId)?.record,
    conversations: async (owner) => records().filter((record) => owner === undefined || record.owner === owner),
    turns: async (convId) => [...(rows.get(convId)?.turns ?? [])],
    frames: async (convId, { since_seq = 0, limit = Number.POSITIVE_INFINITY } = {}): Promise<FramePage<E>> => {
      const row = rows.get(convId);
      if (!row) return { frames: [], last_seq: 0 };
      const start = row.frames.findIndex((frame) => frame.seq > since_seq);
      return { frames: start < 0 ? [] : row.frames.slice(start, start + limit), last_seq: row.lastSeq };
    },
    lastSeq: async (convId) => rows.get(convId)?.lastSeq ?? 0,
    pauses: async (convId) => pausesOf(convId),
    decisions: async (convId) => [...(rows.get(convId)?.decisions ?? [])],
    checkpoints: async (convId) => checkpointsOf(convId),
    engineState: async (convId) => rows.get(convId)?.engineState,
  };
}
