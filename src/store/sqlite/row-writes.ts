import type { Database, Statement } from 'better-sqlite3';
import { toJsonText } from '../../core/json.js';
import type { WriteOp } from '../write-ops.js';
import type { TurnWriter } from './turn-segments.js';

/**
 * Applies one write other than an append to its rows. `turns` writes a turn's blocks as segments;
 * `jsonOfBlocks` serialises a blocks array once per batch (a run's turn and checkpoint share one).
 */
export function createRowWriter(
  db: Database,
  turns: TurnWriter,
  jsonOfBlocks: (blocks: readonly unknown[]) => string,
): (op: Exclude<WriteOp, { kind: 'frames' }>) => void {
  const prepare = (sql: string): Statement => db.prepare(sql);
  const records = createRecordWriter(prepare);
  const putPause = prepare(`INSERT OR REPLACE INTO pauses (pause_id, conv_id, pause) VALUES (?, ?, ?)`);
  const recordDecision = createDecisionWriter(prepare);
  const checkpoints = createCheckpointWriter(prepare, turns, jsonOfBlocks);
  const putEngineState = prepare(`INSERT INTO engine_state (conv_id, state) VALUES (?, ?) ON CONFLICT (conv_id) DO UPDATE SET state = excluded.state`);
  const eraseConversation = createConversationEraser(prepare, turns);

  return (op) => {
    switch (op.kind) {
      case 'conversation':
        records.put(op.record);
        return;
      case 'step':
        records.setStep(op.conv_id, op.step);
        return;
      case 'turn':
        turns.write(op.conv_id, op.turn.id, op.turn.blocks);
        return;
      case 'pause':
        putPause.run(op.pause.pause_id, op.pause.conv_id, JSON.stringify(op.pause));
        return;
      case 'decision':
        recordDecision(op);
        return;
      case 'checkpoint':
        checkpoints.put(op.checkpoint);
        return;
      case 'checkpoint-deleted':
        checkpoints.drop(op.conv_id, op.inference_id);
        return;
      case 'engine-state':
        putEngineState.run(op.conv_id, JSON.stringify(op.state));
        return;
      case 'conversation-deleted':
        eraseConversation(op.conv_id);
        return;
    }
  };
}

/** A decision: its audit row, its pause dropped, and its run's checkpoint marked with it (docs/protocol.md, Durability). */
function createDecisionWriter(prepare: (sql: string) => Statement): (op: Extract<WriteOp, { kind: 'decision' }>) => void {
  const deletePause = prepare(`DELETE FROM pauses WHERE pause_id = ?`);
  const putDecision = prepare(`INSERT INTO decisions (conv_id, decision) VALUES (?, ?)`);
  const markCheckpoint = prepare(`UPDATE checkpoints SET checkpoint = json_set(checkpoint, '$.resolved', json(?)) WHERE conv_id = ? AND inference_id = ?`);
  return ({ decision, resolved }) => {
    deletePause.run(decision.pause_id);
    putDecision.run(decision.conv_id, toJsonText(decision));
    if (resolved) markCheckpoint.run(toJsonText(resolved), decision.conv_id, decision.inference_id);
  };
}

type Checkpoint = Extract<WriteOp, { kind: 'checkpoint' }>['checkpoint'];

/**
 * A run's checkpoint rows. Apart because a checkpoint's blocks are shared with its turn's: when this
 * batch wrote the same array as the turn, the row stores none of its own and reads take the turn's.
 */
function createCheckpointWriter(
  prepare: (sql: string) => Statement,
  turns: TurnWriter,
  jsonOfBlocks: (blocks: readonly unknown[]) => string,
): { put(checkpoint: Checkpoint): void; drop(convId: string, inferenceId: string): void } {
  // Updated in place, not replaced: REPLACE moved the row to a new rowid, dirtying the pages it left and
  // went to and its key's index page at every boundary (pages, not bytes, are what the WAL writes).
  const putCheckpoint = prepare(`INSERT INTO checkpoints (conv_id, inference_id, checkpoint, blocks) VALUES (?, ?, ?, ?)
     ON CONFLICT (conv_id, inference_id) DO UPDATE SET checkpoint = excluded.checkpoint, blocks = excluded.blocks`);
  const deleteCheckpoint = prepare(`DELETE FROM checkpoints WHERE conv_id = ? AND inference_id = ?`);
  return {
    put: (checkpoint) => {
      const { blocks, ...rest } = checkpoint;
      const ownBlocks = turns.writtenInBatch(rest.conv_id, rest.turn_id) === blocks ? null : jsonOfBlocks(blocks);
      putCheckpoint.run(rest.conv_id, rest.inference_id, toJsonText(rest), ownBlocks);
    },
    drop: (convId, inferenceId) => {
      deleteCheckpoint.run(convId, inferenceId);
    },
  };
}

/**
 * A deleted conversation leaves no row in any table keyed by it (one list, so a new table is not
 * missed), and the turn writer no diff against rows that are gone.
 */
function createConversationEraser(prepare: (sql: string) => Statement, turns: TurnWriter): (convId: string) => void {
  const deletes = ['conversations', 'turns', 'turn_blocks', 'frames', 'pauses', 'decisions', 'checkpoints', 'engine_state'].map((table) =>
    prepare(`DELETE FROM ${table} WHERE conv_id = ?`),
  );
  return (convId) => {
    for (const statement of deletes) statement.run(convId);
    // Its turns' rows are gone: none may be written as a change of what was there.
    turns.forget();
  };
}

type ConversationRecord = Extract<WriteOp, { kind: 'conversation' }>['record'];

/**
 * A conversation's record row: written whole when the conversation is, and its step alone in place
 * (the step changes often, the rest of the record seldom).
 */
function createRecordWriter(prepare: (sql: string) => Statement): {
  put(record: ConversationRecord): void;
  setStep(convId: string, step: Extract<WriteOp, { kind: 'step' }>['step']): void;
} {
  const putConversation = prepare(
    `INSERT INTO conversations (conv_id, owner, created_at, record) VALUES (?, ?, ?, ?)
     ON CONFLICT (conv_id) DO UPDATE SET owner = excluded.owner, created_at = excluded.created_at, record = excluded.record`,
  );
  const setStep = prepare(`UPDATE conversations SET record = json_set(record, '$.step', json(?)) WHERE conv_id = ?`);
  return {
    put: (record) => {
      putConversation.run(record.conv_id, record.owner ?? null, record.created_at, JSON.stringify(record));
    },
    setStep: (convId, step) => {
      setStep.run(JSON.stringify(step), convId);
    },
  };
}
