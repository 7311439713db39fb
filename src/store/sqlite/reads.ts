import type { Database, Statement } from 'better-sqlite3';
import type { ConversationRecord, DecisionRecord, FrameEvent, JsonValue, StoredPause } from '../../core/store.js';
import { createFrameReads, type FrameReads } from './frame-reads.js';
import { parse, parseAll } from './json-rows.js';
import { createRecoveryReads, type RecoveryReads } from './recovery-reads.js';

/** The store's queries, prepared once; synchronous (better-sqlite3), wrapped in Promises by the store. */
export interface StoreReads<E extends FrameEvent> extends RecoveryReads, FrameReads<E> {
  conversation(convId: string): ConversationRecord | undefined;
  conversations(owner?: string): ConversationRecord[];
  pauses(convId?: string): StoredPause[];
  decisions(convId: string): DecisionRecord[];
  engineState(convId: string): JsonValue | undefined;
}

export function createStoreReads<E extends FrameEvent>(db: Database): StoreReads<E> {
  const prepare = (sql: string): Statement => db.prepare(sql);
  const conversation = prepare(`SELECT record FROM conversations WHERE conv_id = ?`).pluck();
  const allConversations = prepare(`SELECT record FROM conversations ORDER BY created_at, rowid`).pluck();
  const ownersConversations = prepare(`SELECT record FROM conversations WHERE owner = ? ORDER BY created_at, rowid`).pluck();
  const pauses = prepare(`SELECT pause FROM pauses WHERE conv_id = ? ORDER BY rowid`).pluck();
  const allPauses = prepare(`SELECT pause FROM pauses ORDER BY rowid`).pluck();
  const decisions = prepare(`SELECT decision FROM decisions WHERE conv_id = ? ORDER BY id`).pluck();
  const engineState = prepare(`SELECT state FROM engine_state WHERE conv_id = ?`).pluck();

  return {
    ...createRecoveryReads(db),
    ...createFrameReads<E>(db),
    conversation: (convId) => {
      const json = conversation.get(convId) as string | undefined;
      return json === undefined ? undefined : parse<ConversationRecord>(json);
    },
    conversations: (owner) =>
      owner === undefined ? parseAll<ConversationRecord>(allConversations) : parseAll<ConversationRecord>(ownersConversations, owner),
    pauses: (convId) => (convId === undefined ? parseAll<StoredPause>(allPauses) : parseAll<StoredPause>(pauses, convId)),
    decisions: (convId) => parseAll<DecisionRecord>(decisions, convId),
    engineState: (convId) => {
      const json = engineState.get(convId) as string | undefined;
      return json === undefined ? undefined : parse<JsonValue>(json);
    },
  };
}
