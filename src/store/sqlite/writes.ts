import type { Database, Statement } from 'better-sqlite3';
import { toJsonText } from '../../core/json.js';
import type { FrameEvent, StoredFrame } from '../../core/store.js';
import type { Retention } from '../retention.js';
import { liveOps, type WriteOp } from '../write-ops.js';
import { encodeChunk, joinTexts } from './frame-chunks.js';
import { createTurnWriter } from './turn-segments.js';

/** Applies a batch of writes in one transaction, with statements prepared once. */
export interface BatchWriter {
  /** Writes one batch in one transaction. */
  (ops: readonly WriteOp[]): void;
  /** Drops what is remembered of a conversation's turns to write them faster (its session closed). */
  forget(convId: string): void;
}

export function createBatchWriter(db: Database, retention: Retention): BatchWriter {
  const prepare = (sql: string): Statement => db.prepare(sql);
  const putConversation = prepare(
    `INSERT INTO conversations (conv_id, owner, created_at, record) VALUES (?, ?, ?, ?)
     ON CONFLICT (conv_id) DO UPDATE SET owner = excluded.owner, created_at = excluded.created_at, record = excluded.record`,
  );
  const setStep = prepare(`UPDATE conversations SET record = json_set(record, '$.step', json(?)) WHERE conv_id = ?`);
  const putChunk = prepare(`INSERT INTO frames (conv_id, first_seq, last_seq, shared, events) VALUES (?, ?, ?, ?, ?)`);
  const putTexts = prepare(`INSERT INTO frames (conv_id, first_seq, last_seq, events, texts) VALUES (?, ?, ?, '', ?)`);
  const trimChunks = prepare(`DELETE FROM frames WHERE conv_id = ? AND last_seq < ?`);
  const oldestKept = prepare(`SELECT first_seq FROM frames WHERE conv_id = ? ORDER BY last_seq LIMIT 1`).pluck();
  const putPause = prepare(`INSERT OR REPLACE INTO pauses (pause_id, conv_id, pause) VALUES (?, ?, ?)`);
  const deletePause = prepare(`DELETE FROM pauses WHERE pause_id = ?`);
  const putDecision = prepare(`INSERT INTO decisions (conv_id, decision) VALUES (?, ?)`);
  const putCheckpoint = prepare(`INSERT OR REPLACE INTO checkpoints (conv_id, inference_id, checkpoint, blocks) VALUES (?, ?, ?, ?)`);
  const deleteCheckpoint = prepare(`DELETE FROM checkpoints WHERE conv_id = ? AND inference_id = ?`);
  const putEngineState = prepare(`INSERT OR REPLACE INTO engine_state (conv_id, state) VALUES (?, ?)`);
  const deletes = ['conversations', 'turns', 'turn_blocks', 'frames', 'pauses', 'decisions', 'checkpoints', 'engine_state'].map((table) =>
    prepare(`DELETE FROM ${table} WHERE conv_id = ?`),
  );

  /** Deletes whole chunks older than the newest `retention.max` frames, once a quarter more is stored. */
  const trim = (convId: string, lastSeq: number): void => {
    if (lastSeq - (oldestKept.get(convId) as number) + 1 <= retention.trimAt) return;
    trimChunks.run(convId, lastSeq - retention.max + 1);
  };

  /**
   * One chunk per conversation for the frames of consecutive appends (each checked contiguous when
   * queued): a chunk of wire texts, stored as they are, or of events; a new chunk where that changes.
   */
  const writeFrames = (frames: readonly StoredFrame<FrameEvent>[]): void => {
    const chunks = new Map<string, FrameChunk>();
    const flushChunk = (convId: string, chunk: FrameChunk): void => {
      if (chunk.texts) putTexts.run(convId, chunk.first, chunk.last, joinTexts(chunk.texts));
      else {
        const encoded = encodeChunk(chunk.events);
        putChunk.run(convId, chunk.first, chunk.last, encoded.shared, encoded.events);
      }
    };
    for (const frame of frames) {
      const convId = frame.event.conv_id;
      let chunk = chunks.get(convId);
      if (chunk && (chunk.texts !== undefined) !== (frame.text !== undefined)) flushChunk(convId, chunk);
      else if (chunk) {
        chunk.last = frame.seq;
        if (chunk.texts) chunk.texts.push(frame.text as string);
        else chunk.events.push(frame.event);
        continue;
      }
      chunks.set(convId, (chunk = newChunk(frame)));
    }
    for (const [convId, chunk] of chunks) {
      flushChunk(convId, chunk);
      if (retention.max !== Number.POSITIVE_INFINITY) trim(convId, chunk.last);
    }
  };

  // A run's turn and checkpoint hold the same blocks array: serialised once per batch, not per write
  // (the turn grows every phase, so this was half the batch's JSON in `loop_step_sqlite`).
  const blocksJson = new Map<readonly unknown[], string>();
  const jsonOfBlocks = (blocks: readonly unknown[]): string => {
    let json = blocksJson.get(blocks);
    if (json === undefined) blocksJson.set(blocks, (json = toJsonText(blocks)));
    return json;
  };
  // A checkpoint of the blocks its turn was written with in this batch (the runtime writes a run's
  // turn and checkpoint from one array at every phase boundary) leaves them to its turn's rows
  // instead of writing the whole turn a second time. The turn grows every step and, on a server,
  // each boundary is a batch of its own: a 20-step run with 2 KB results wrote 2247 KB to the WAL
  // before, 1918 KB with this alone (pages, not bytes, are what the WAL writes).
  const turns = createTurnWriter(db, jsonOfBlocks);

  const apply = (op: Exclude<WriteOp, { kind: 'frames' }>): void => {
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
        deletePause.run(op.decision.pause_id);
        putDecision.run(op.decision.conv_id, toJsonText(op.decision));
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

  const transaction = db.transaction((ops: readonly WriteOp[]) => {
    // The batch commits atomically, so the frames of all its appends can be written together (fewer,
    // larger chunks) after the other writes; only a delete must see the frames queued before it.
    let frames: StoredFrame<FrameEvent>[] = [];
    for (const op of liveOps(ops)) {
      if (op.kind === 'frames') {
        for (const frame of op.frames) frames.push(frame);
        continue;
      }
      if (op.kind === 'conversation-deleted' && frames.length > 0) {
        writeFrames(frames);
        frames = [];
      }
      apply(op);
    }
    if (frames.length > 0) writeFrames(frames);
  });
  const write = (ops: readonly WriteOp[]): void => {
    try {
      transaction(ops);
      turns.committed();
    } catch (error) {
      turns.forget();
      throw error;
    } finally {
      blocksJson.clear();
    }
  };
  return Object.assign(write, { forget: (convId: string) => turns.forgetConversation(convId) });
}

/** The frames of one conversation in a batch, as their texts or as their events. */
interface FrameChunk {
  readonly first: number;
  last: number;
  readonly texts: string[] | undefined;
  readonly events: FrameEvent[];
}

const newChunk = ({ seq, event, text }: StoredFrame<FrameEvent>): FrameChunk =>
  text === undefined ? { first: seq, last: seq, texts: undefined, events: [event] } : { first: seq, last: seq, texts: [text], events: [] };
