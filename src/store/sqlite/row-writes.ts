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
  const putConversation = prepare(
    `INSERT INTO conversations (conv_id, owner, created_at, record) VALUES (?, ?, ?, ?)
     ON CONFLICT (conv_id) DO UPDATE SET owner = excluded.owner, created_at = excluded.created_at, record = excluded.record`,
  );
  const setStep = prepare(`UPDATE conversations SET record = json_set(record, '$.step', json(?)) WHERE conv_id = ?`);
  const putPause = prepare(`INSERT OR REPLACE INTO pauses (pause_id, conv_id, pause) VALUES (?, ?, ?)`);
  const recordDecision = createDecisionWriter(prepare);
  const putCheckpoint = prepare(`INSERT OR REPLACE INTO checkpoints (conv_id, inference_id, checkpoint, blocks) VALUES (?, ?, ?, ?)`);
  const deleteCheckpoint = prepare(`DELETE FROM checkpoints WHERE conv_id = ? AND inference_id = ?`);
  const putEngineState = prepare(`INSERT OR REPLACE INTO engine_state (conv_id, state) VALUES (?, ?)`);
  const deletes = ['conversations', 'turns', 'turn_blocks', 'frames', 'pauses', 'decisions', 'checkpoints', 'engine_state'].map((table) =>
    prepare(`DELETE FROM ${table} WHERE conv_id = ?`),
  );

  return (op) => {
    switch (op.kind) {
      case 'conversation':
        putConversation.run(op.record.conv_id, op.record.owner ?? null, op.record.created_at, JSON.stringify(op.record));
        return;
      case 'step':
        setStep.run(JSON.stringify(op.step), op.conv_id);
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
      case 'checkpoint': {
        const { blocks, ...rest } = op.checkpoint;
        const ownBlocks = turns.writtenInBatch(rest.conv_id, rest.turn_id) === blocks ? null : jsonOfBlocks(blocks);
        putCheckpoint.run(rest.conv_id, rest.inference_id, toJsonText(rest), ownBlocks);
        return;
      }
      case 'checkpoint-deleted':
        deleteCheckpoint.run(op.conv_id, op.inference_id);
        return;
      case 'engine-state':
        putEngineState.run(op.conv_id, JSON.stringify(op.state));
        return;
      case 'conversation-deleted':
        for (const statement of deletes) statement.run(op.conv_id);
        // Its turns' rows are gone: none may be written as a change of what was there.
        turns.forget();
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
