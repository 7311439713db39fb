import type { ChainableCommander } from 'ioredis';
import { toJsonText } from '../../core/json.js';
import type { WriteOp } from '../write-ops.js';
import { checkpointField, type RedisKeys } from './keys.js';
import { callScript } from './scripts.js';

/** A write other than an append. */
type RowOp = Exclude<WriteOp, { kind: 'frames' }>;
/** A run's write: fenced by its conversation's lease (see ./scripts.ts). */
type RunOp = Extract<RowOp, { kind: 'turn' | 'pause' | 'decision' | 'checkpoint' | 'checkpoint-deleted' | 'engine-state' }>;

/** Queues one write's commands; returns how many (each has a reply). `token`: its run's, for a run's write. */
export function queueWrite(multi: ChainableCommander, keys: RedisKeys, op: RowOp, token: string): number {
  switch (op.kind) {
    case 'conversation': {
      const { conv_id, created_at } = op.record;
      multi.hset(keys.conversations, conv_id, JSON.stringify(op.record));
      multi.zadd(keys.conversationOrder, created_at, conv_id);
      // The record carries its step setting: an older `setStep` no longer applies.
      multi.hdel(keys.steps, conv_id);
      return 3;
    }
    case 'step':
      multi.hset(keys.steps, op.conv_id, JSON.stringify(op.step));
      return 1;
    case 'conversation-deleted':
      queueDelete(multi, keys, op.conv_id);
      return 1;
    default:
      queueRunWrite(multi, keys, op, token);
      return 1;
  }
}

/** One script call that checks the lease holds `token` and writes. */
function queueRunWrite(multi: ChainableCommander, keys: RedisKeys, op: RunOp, token: string): void {
  switch (op.kind) {
    case 'engine-state':
      callScript(multi, 'stepwiseEngineState', [keys.engineStates, keys.conversation(op.conv_id).lease], [op.conv_id, JSON.stringify(op.state), token]);
      return;
    case 'turn': {
      const own = keys.conversation(op.conv_id);
      callScript(multi, 'stepwiseTurn', [own.turns, own.turnOrder, own.lease], [op.turn.id, toJsonText(op.turn.blocks), token]);
      return;
    }
    case 'pause': {
      const own = keys.conversation(op.pause.conv_id);
      callScript(
        multi,
        'stepwisePause',
        [keys.counter, keys.pauses, keys.pauseOrder, own.pauses, own.lease, keys.pauseConvs, keys.pauseDeadlines],
        [op.pause.pause_id, JSON.stringify(op.pause), token, op.pause.conv_id, op.pause.deadline_ms],
      );
      return;
    }
    case 'decision': {
      const own = keys.conversation(op.decision.conv_id);
      callScript(
        multi,
        'stepwiseDecision',
        [keys.pauses, keys.pauseOrder, own.pauses, own.decisions, own.decided, own.lease, keys.pauseDeadlines, keys.checkpoints],
        [
          op.decision.pause_id,
          toJsonText(op.decision),
          token,
          checkpointField(op.decision.conv_id, op.decision.inference_id),
          op.resolved ? toJsonText(op.resolved) : '',
        ],
      );
      return;
    }
    case 'checkpoint':
    case 'checkpoint-deleted': {
      const [convId, json] = op.kind === 'checkpoint' ? [op.checkpoint.conv_id, toJsonText(op.checkpoint)] : [op.conv_id, ''];
      const field = checkpointField(convId, op.kind === 'checkpoint' ? op.checkpoint.inference_id : op.inference_id);
      const own = keys.conversation(convId);
      callScript(multi, 'stepwiseCheckpoint', [keys.checkpoints, own.checkpoints, own.lease], [field, json, token]);
      return;
    }
  }
}

/** Deletes the conversation and every key of it, in one script call. */
function queueDelete(multi: ChainableCommander, keys: RedisKeys, convId: string): void {
  const own = keys.conversation(convId);
  callScript(
    multi,
    'stepwiseDelete',
    [
      keys.conversations,
      keys.conversationOrder,
      keys.steps,
      keys.lastSeqs,
      keys.engineStates,
      keys.pauses,
      keys.pauseOrder,
      keys.checkpoints,
      own.pauses,
      own.checkpoints,
      own.frames,
      own.turns,
      own.turnOrder,
      own.decisions,
      own.decided,
      keys.pauseConvs,
      keys.pauseDeadlines,
    ],
    [convId],
  );
}
