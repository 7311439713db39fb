import type { ChainableCommander } from 'ioredis';
import { toJsonText } from '../../core/json.js';
import type { FrameEvent, StoredFrame } from '../../core/store.js';
import { LeaseLostError, StoreSequenceError } from '../../core/store-errors.js';
import type { Retention } from '../retention.js';
import { convOf, liveOps, type WriteOp } from '../write-ops.js';
import type { RedisKeys } from './keys.js';
import { callScript } from './scripts.js';
import { queueWrite } from './write-commands.js';

type FramesOp = Extract<WriteOp, { kind: 'frames' }>;

/** One append queued in a transaction: where its reply is, and how to read a refusal. */
export interface QueuedAppend {
  readonly op: FramesOp;
  /** Index of its script call's reply in the transaction's replies. */
  readonly reply: number;
  /** Its place in that call's replies (one call carries several appends). */
  readonly slot: number;
  /** Conversations in the order the script was given them, with the first seq asked for each. */
  readonly convs: readonly (readonly [convId: string, first: number])[];
}

/**
 * Queues a batch of writes on one MULTI transaction: everything queued in one tick is one round trip,
 * applied by Redis as a whole. The appends go together in one script call after the other writes
 * (far more frames a second than a call per append, the hub appending one frame at a time); that is safe
 * because the batch commits as a whole and no other write reads the frames, except a delete: the
 * appends queued before one are sent before it. `retry` marks a batch sent again after a failure
 * whose outcome is unknown (see the append script). `tokenOf` gives the writer's token per
 * conversation: a run's writes are fenced with their conversation's lease (see ./scripts.ts).
 * Returns the appends and the other fenced writes, to read their replies.
 */
export function queueBatch(
  multi: ChainableCommander,
  keys: RedisKeys,
  retention: Retention,
  ops: readonly WriteOp[],
  retry: boolean,
  tokenOf: TokenOf,
): QueuedBatch {
  const appends: QueuedAppend[] = [];
  const fenced: FencedWrite[] = [];
  let replies = 0;
  let group: FramesOp[] = [];
  const sendGroup = (): void => {
    if (group.length === 0) return;
    const convs = queueAppends(multi, keys, retention, group, retry, tokenOf);
    group.forEach((op, slot) => appends.push({ op, reply: replies, slot, convs: convs[slot] ?? [] }));
    replies += 1;
    group = [];
  };
  for (const op of liveOps(ops)) {
    if (op.kind === 'frames') {
      group.push(op);
      continue;
    }
    if (op.kind === 'conversation-deleted') sendGroup();
    const convId = fencedConv(op);
    if (convId !== undefined) fenced.push({ reply: replies, conv_id: convId });
    replies += queueWrite(multi, keys, op, convId === undefined ? '' : tokenOf(convId));
  }
  sendGroup();
  return { appends, fenced };
}

/** The writer's token for a conversation's run writes: '' unfenced, else one only its lease may hold. */
export type TokenOf = (convId: string) => string;

/** A batch on its transaction: its appends and its other fenced writes, each with where its reply is. */
export interface QueuedBatch {
  readonly appends: readonly QueuedAppend[];
  readonly fenced: readonly FencedWrite[];
}

/** A fenced write other than an append: its script replies 1 when the lease refused it. */
export interface FencedWrite {
  readonly reply: number;
  readonly conv_id: string;
}

/** The conversation of a run's write (fenced by its lease); undefined for the writes that are not a run's. */
const fencedConv = (op: Exclude<WriteOp, FramesOp>): string | undefined => (RUN_WRITES.has(op.kind) ? convOf(op) : undefined);

/** The writes of a run, as opposed to those of its conversation (its record, step mode, its deletion). */
const RUN_WRITES: ReadonlySet<WriteOp['kind']> = new Set(['turn', 'checkpoint-deleted', 'engine-state', 'pause', 'decision', 'checkpoint']);

/** An append's own reply among the transaction's replies: `{0, 0}` written, `{i, expected}` refused. */
export function appendReply(append: QueuedAppend, replies: readonly [Error | null, unknown][]): [Error | null, unknown] {
  const [error, results] = replies[append.reply] ?? [new Error('no reply to the append script')];
  return error ? [error, undefined] : [null, (results as unknown[])[append.slot]];
}

/** The error an append's reply says, if any. */
export function appendRefusal(append: QueuedAppend, reply: unknown): StoreSequenceError | LeaseLostError | undefined {
  const [index, expected] = reply as [number, number];
  if (index === 0) return undefined;
  const [convId, got] = append.convs[index - 1] ?? ['?', 0];
  return expected === -1 ? new LeaseLostError(convId) : new StoreSequenceError(convId, expected, got);
}

/** One script call for several appends; returns each append's conversations and first seqs. */
function queueAppends(
  multi: ChainableCommander,
  keys: RedisKeys,
  retention: Retention,
  ops: readonly FramesOp[],
  retry: boolean,
  tokenOf: TokenOf,
): (readonly (readonly [string, number])[])[] {
  const max = retention.max === Number.POSITIVE_INFINITY ? 0 : retention.max;
  const args: (string | number)[] = [retry ? '1' : '0', max, max === 0 ? 0 : retention.trimAt, ops.length];
  const streams = new Map<string, number>();
  const streamIndex = (convId: string): number => {
    let index = streams.get(convId);
    // KEYS[1] is last-seqs, then per conversation its stream and its lease.
    if (index === undefined) streams.set(convId, (index = streams.size * 2 + 2));
    return index;
  };
  const convsOfEach = ops.map(({ frames }) => {
    // Grouped per conversation (an append may interleave several): each stream gets its frames in order.
    const groups = new Map<string, StoredFrame<FrameEvent>[]>();
    for (const frame of frames) {
      const group = groups.get(frame.event.conv_id);
      if (group) group.push(frame);
      else groups.set(frame.event.conv_id, [frame]);
    }
    args.push(groups.size);
    const convs: (readonly [string, number])[] = [];
    for (const [convId, group] of groups) {
      const first = (group[0] as StoredFrame<FrameEvent>).seq;
      convs.push([convId, first]);
      const stream = streamIndex(convId);
      args.push(convId, stream, stream + 1, first, group.length, tokenOf(convId));
    }
    // A frame's wire text goes in as it is (the bytes every instance's clients get); an event as JSON.
    for (const group of groups.values()) for (const { event, text } of group) text === undefined ? args.push('e', toJsonText(event)) : args.push('w', text);
    return convs;
  });
  const streamKeys = [...streams.keys()].flatMap((convId) => [keys.conversation(convId).frames, keys.conversation(convId).lease]);
  callScript(multi, 'stepwiseAppend', [keys.lastSeqs, ...streamKeys], args);
  return convsOfEach;
}
