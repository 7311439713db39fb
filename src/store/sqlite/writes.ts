import type { Database, Statement } from 'better-sqlite3';
import type { ConversationRecord, DecisionRecord, FrameEvent, JsonValue, RunCheckpoint, StepSetting, StoredFrame, StoredPause } from '../../core/store.js';
import type { Turn } from '../../core/turns.js';
import type { Retention } from '../retention.js';

/** One queued write, applied in order inside its batch's transaction. */
export type WriteOp =
  | { readonly kind: 'conversation'; readonly record: ConversationRecord }
  | { readonly kind: 'step'; readonly conv_id: string; readonly step: StepSetting }
  | { readonly kind: 'turn'; readonly conv_id: string; readonly turn: Turn }
  | { readonly kind: 'frames'; readonly frames: readonly StoredFrame<FrameEvent>[] }
  | { readonly kind: 'pause'; readonly pause: StoredPause }
  | { readonly kind: 'decision'; readonly decision: DecisionRecord }
  | { readonly kind: 'checkpoint'; readonly checkpoint: RunCheckpoint }
  | { readonly kind: 'checkpoint-deleted'; readonly conv_id: string; readonly inference_id: string }
  | { readonly kind: 'engine-state'; readonly conv_id: string; readonly state: JsonValue }
  | { readonly kind: 'conversation-deleted'; readonly conv_id: string };

/** Applies a batch of writes in one transaction, with statements prepared once. */
export type BatchWriter = (ops: readonly WriteOp[]) => void;

export function createBatchWriter(db: Database, retention: Retention): BatchWriter {
  const prepare = (sql: string): Statement => db.prepare(sql);
  const putConversation = prepare(
    `INSERT INTO conversations (conv_id, owner, created_at, record) VALUES (?, ?, ?, ?)
     ON CONFLICT (conv_id) DO UPDATE SET owner = excluded.owner, created_at = excluded.created_at, record = excluded.record`,
  );
  const setStep = prepare(`UPDATE conversations SET record = json_set(record, '$.step', json(?)) WHERE conv_id = ?`);
  // A new turn goes after the conversation's last; a known one keeps its place and gets new blocks.
  const putTurn = prepare(
    `INSERT INTO turns (conv_id, turn_id, ord, blocks)
     VALUES (@conv_id, @turn_id, (SELECT coalesce(max(ord), 0) + 1 FROM turns WHERE conv_id = @conv_id), @blocks)
     ON CONFLICT (conv_id, turn_id) DO UPDATE SET blocks = excluded.blocks`,
  );
  const putFrame = prepare(`INSERT INTO frames (conv_id, seq, event) VALUES (?, ?, ?)`);
  const putLog = prepare(
    `INSERT INTO frame_logs (conv_id, first_seq, last_seq) VALUES (?, ?, ?)
     ON CONFLICT (conv_id) DO UPDATE SET last_seq = excluded.last_seq`,
  );
  const firstSeq = prepare(`SELECT first_seq FROM frame_logs WHERE conv_id = ?`).pluck();
  const trimFrames = prepare(`DELETE FROM frames WHERE conv_id = ? AND seq < ?`);
  const setFirstSeq = prepare(`UPDATE frame_logs SET first_seq = ? WHERE conv_id = ?`);
  const putPause = prepare(`INSERT OR REPLACE INTO pauses (pause_id, conv_id, pause) VALUES (?, ?, ?)`);
  const deletePause = prepare(`DELETE FROM pauses WHERE pause_id = ?`);
  const putDecision = prepare(`INSERT INTO decisions (conv_id, decision) VALUES (?, ?)`);
  const putCheckpoint = prepare(`INSERT OR REPLACE INTO checkpoints (conv_id, inference_id, checkpoint) VALUES (?, ?, ?)`);
  const deleteCheckpoint = prepare(`DELETE FROM checkpoints WHERE conv_id = ? AND inference_id = ?`);
  const putEngineState = prepare(`INSERT OR REPLACE INTO engine_state (conv_id, state) VALUES (?, ?)`);
  const deletes = ['conversations', 'turns', 'frames', 'frame_logs', 'pauses', 'decisions', 'checkpoints', 'engine_state'].map((table) =>
    prepare(`DELETE FROM ${table} WHERE conv_id = ?`),
  );

  const appendFrames = (frames: readonly StoredFrame<FrameEvent>[]): void => {
    const first = new Map<string, number>();
    const last = new Map<string, number>();
    for (const { seq, event } of frames) {
      putFrame.run(event.conv_id, seq, JSON.stringify(event));
      if (!first.has(event.conv_id)) first.set(event.conv_id, seq);
      last.set(event.conv_id, seq);
    }
    for (const [convId, seq] of last) {
      putLog.run(convId, first.get(convId), seq);
      if (retention.max === Number.POSITIVE_INFINITY) continue;
      const kept = seq - (firstSeq.get(convId) as number) + 1;
      if (kept <= retention.trimAt) continue;
      const keepFrom = seq - retention.max + 1;
      trimFrames.run(convId, keepFrom);
      setFirstSeq.run(keepFrom, convId);
    }
  };

  const apply = (op: WriteOp): void => {
    switch (op.kind) {
      case 'conversation':
        putConversation.run(op.record.conv_id, op.record.owner ?? null, op.record.created_at, JSON.stringify(op.record));
        return;
      case 'step':
        setStep.run(JSON.stringify(op.step), op.conv_id);
        return;
      case 'turn':
        putTurn.run({ conv_id: op.conv_id, turn_id: op.turn.id, blocks: JSON.stringify(op.turn.blocks) });
        return;
      case 'frames':
        appendFrames(op.frames);
        return;
      case 'pause':
        putPause.run(op.pause.pause_id, op.pause.conv_id, JSON.stringify(op.pause));
        return;
      case 'decision':
        deletePause.run(op.decision.pause_id);
        putDecision.run(op.decision.conv_id, JSON.stringify(op.decision));
        return;
      case 'checkpoint':
        putCheckpoint.run(op.checkpoint.conv_id, op.checkpoint.inference_id, JSON.stringify(op.checkpoint));
        return;
      case 'checkpoint-deleted':
        deleteCheckpoint.run(op.conv_id, op.inference_id);
        return;
      case 'engine-state':
        putEngineState.run(op.conv_id, JSON.stringify(op.state));
        return;
      case 'conversation-deleted':
        for (const statement of deletes) statement.run(op.conv_id);
        return;
    }
  };

  return db.transaction((ops: readonly WriteOp[]) => {
    for (const op of ops) apply(op);
  });
}
