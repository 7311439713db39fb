import type { JsonValue, StoredConversation, UnreadableRow } from '../../core/store.js';
import { StoredRowError } from '../../core/store-errors.js';
import type { Turn } from '../../core/turns.js';
import type { Writable } from '../../core/writable.js';
import { messageOf, parseStored, readRecord } from '../stored-rows.js';
import { lazyTurn, type SegmentsOf, type TurnTuple } from './turn-rows.js';

/** A conversation's row with what recovery needs beside its record: its key, record, last seq (null: no frame) and engine state (null: none). */
export type RecordTuple = readonly [convId: string, record: string, lastSeq: number | null, engineState: string | null];

/**
 * Every stored conversation, in order, completed with its turns, last seq and engine state. `turns`
 * lists the conversations' turns in the same order as `records` (each conversation's in the order
 * they were written), so each conversation takes the run of turns that names it as both are walked:
 * no map of every conversation's turns to build and look up again. Each record and engine state is
 * checked as every stored row is; one that cannot be read back is named in `unreadable`.
 */
export function readConversations(records: Iterable<RecordTuple>, turns: Iterator<TurnTuple>, segmentsOf: SegmentsOf, unreadable: UnreadableRow[]): StoredConversation[] {
  const conversations: StoredConversation[] = [];
  let next = turns.next();
  try {
    for (const [convId, json, lastSeq, state] of records) {
      const own: Turn[] = [];
      for (; !next.done && next.value[0] === convId; next = turns.next()) own.push(lazyTurn(next.value[1], next.value[2], segmentsOf(convId, next.value[1])));
      let conversation: Writable<StoredConversation>;
      try {
        conversation = completed(convId, json, own, lastSeq ?? 0);
      } catch (error) {
        unreadable.push({ conv_id: convId, error: messageOf(error) });
        continue;
      }
      conversations.push(conversation);
      if (state === null) continue;
      try {
        conversation.engine_state = parseStored<JsonValue>(state, () => `the engine state of conversation ${convId}`);
      } catch (error) {
        unreadable.push({ conv_id: convId, error: messageOf(error) });
      }
    }
  } finally {
    // The statement is done with even if a row was left: its transaction can end.
    turns.return?.();
  }
  return conversations;
}

/** The record, checked and stored under its own id (its turns are found by that key), completed in place: it is fresh from JSON.parse. */
function completed(convId: string, json: string, turns: Turn[], lastSeq: number): Writable<StoredConversation> {
  const conversation = readRecord(json, convId) as Writable<StoredConversation>;
  if (conversation.conv_id !== convId) throw new StoredRowError(`the record of conversation ${convId}`, 'its conv_id is not the one it is stored under');
  conversation.turns = turns;
  conversation.last_seq = lastSeq;
  return conversation;
}
