import type { ChainableCommander } from 'ioredis';
import type { FrameEvent, StoredFrame } from '../../core/store.js';
import { StoreSequenceError } from '../../core/store-errors.js';
import type { Retention } from '../retention.js';
import { liveOps, type WriteOp } from '../write-ops.js';
import { checkpointField, type RedisKeys } from './keys.js';
import { callScript } from './scripts.js';

type FramesOp = Extract<WriteOp, { kind: 'frames' }>;

/** One append queued in a transaction: where its reply is, and how to read a refusal. */
export interface QueuedAppend {
  readonly op: FramesOp;
  /** Index of its script's reply in the transaction's replies. */
  readonly reply: number;
  /** Conversations in the order the script was given them, with the first seq asked for each. */
  readonly convs: readonly (readonly [convId: string, first: number])[];
}

/**
 * Queues a batch of writes on one MULTI transaction, in order: everything queued in one tick is one
 * round trip, applied by Redis as a whole. `retry` marks a batch sent again after a failure whose
 * outcome is unknown (see the append script). Returns the appends, to read their replies.
 */
export function queueBatch(
  multi: ChainableCommander,
  keys: RedisKeys,
  retention: Retention,
  ops: readonly WriteOp[],
  retry: boolean,
): QueuedAppend[] {
  const appends: QueuedAppend[] = [];
  let replies = 0;
  for (const op of liveOps(ops)) {
    if (op.kind === 'frames') {
      const convs = queueAppend(multi, keys, retention, op.frames, retry);
      appends.push({ op, reply: replies, convs });
      replies += 1;
    } else replies += queueWrite(multi, keys, op);
  }
  return appends;
}

/** The error an append's reply says, if any: `{0, 0}` is written, `{i, expected}` a refusal. */
export function appendRefusal(append: QueuedAppend, reply: unknown): StoreSequenceError | undefined {
  const [index, expected] = reply as [number, number];
  if (index === 0) return undefined;
  const [convId, got] = append.convs[index - 1] ?? ['?', 0];
  return new StoreSequenceError(convId, expected, got);
}

function queueAppend(
  multi: ChainableCommander,
  keys: RedisKeys,
  retention: Retention,
  frames: readonly StoredFrame<FrameEvent>[],
  retry: boolean,
): (readonly [string, number])[] {
  // Grouped per conversation (an append may interleave several): each stream gets its frames in order.
  const groups = new Map<string, StoredFrame<FrameEvent>[]>();
  for (const frame of frames) {
    const group = groups.get(frame.event.conv_id);
    if (group) group.push(frame);
    else groups.set(frame.event.conv_id, [frame]);
  }
  const convs = [...groups].map(([convId, group]) => [convId, (group[0] as StoredFrame<FrameEvent>).seq] as const);
  const max = retention.max === Number.POSITIVE_INFINITY ? 0 : retention.max;
  const args: (string | number)[] = [retry ? '1' : '0', max, max === 0 ? 0 : retention.trimAt, groups.size];
  for (const [convId, group] of groups) args.push(convId, (group[0] as StoredFrame<FrameEvent>).seq, group.length);
  for (const group of groups.values()) for (const { event } of group) args.push(JSON.stringify(event));
  const streams = [...groups.keys()].map((convId) => keys.conversation(convId).frames);
  callScript(multi, 'stepwiseAppend', [keys.lastSeqs, ...streams], args);
  return convs;
}

/** Queues one write's commands; returns how many (each has a reply). */
function queueWrite(multi: ChainableCommander, keys: RedisKeys, op: Exclude<WriteOp, FramesOp>): number {
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
    case 'turn': {
      const own = keys.conversation(op.conv_id);
      callScript(multi, 'stepwiseTurn', [own.turns, own.turnOrder], [op.turn.id, JSON.stringify(op.turn.blocks)]);
      return 1;
    }
    case 'pause': {
      const own = keys.conversation(op.pause.conv_id);
      callScript(multi, 'stepwisePause', [keys.counter, keys.pauses, keys.pauseOrder, own.pauses], [op.pause.pause_id, JSON.stringify(op.pause)]);
      return 1;
    }
    case 'decision': {
      const own = keys.conversation(op.decision.conv_id);
      callScript(
        multi,
        'stepwiseDecision',
        [keys.pauses, keys.pauseOrder, own.pauses, own.decisions, own.decided],
        [op.decision.pause_id, JSON.stringify(op.decision)],
      );
      return 1;
    }
    case 'checkpoint': {
      const { conv_id, inference_id } = op.checkpoint;
      const field = checkpointField(conv_id, inference_id);
      multi.hset(keys.checkpoints, field, JSON.stringify(op.checkpoint));
      multi.sadd(keys.conversation(conv_id).checkpoints, field);
      return 2;
    }
    case 'checkpoint-deleted': {
      const field = checkpointField(op.conv_id, op.inference_id);
      multi.hdel(keys.checkpoints, field);
      multi.srem(keys.conversation(op.conv_id).checkpoints, field);
      return 2;
    }
    case 'engine-state':
      multi.hset(keys.engineStates, op.conv_id, JSON.stringify(op.state));
      return 1;
    case 'conversation-deleted': {
      const own = keys.conversation(op.conv_id);
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
        ],
        [op.conv_id],
      );
      return 1;
    }
  }
}
