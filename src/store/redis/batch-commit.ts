import type { FrameEvent } from '../../core/store.js';
import { LeaseLostError, StoreSequenceError } from '../../core/store-errors.js';
import type { Retention } from '../retention.js';
import type { WriteOp } from '../write-ops.js';
import type { RedisAppends } from './appends.js';
import type { Connection } from './connection.js';
import type { RedisKeys } from './keys.js';
import { appendRefusal, appendReply, queueBatch, type QueuedBatch, type TokenOf } from './writes.js';
import { createGiveUp } from '../give-up.js';

export interface BatchCommitConfig {
  readonly connection: Connection;
  readonly keys: RedisKeys;
  readonly retention: Retention;
  /** Wait between attempts while Redis is unreachable, ms. */
  readonly retryMs: number;
  readonly tokenOf: TokenOf;
  readonly appends: RedisAppends<FrameEvent>;
  /** A run's write was refused by its lease. */
  readonly refused: (convId: string) => void;
}

/** Commits the store's batches; `giveUp` ends the attempts (close). */
export interface BatchCommit {
  commit(ops: readonly WriteOp[]): Promise<void>;
  /** From now on a batch that cannot reach Redis fails, and one waiting in ioredis's offline queue ends now. */
  giveUp(): void;
}

/**
 * One MULTI per batch; sent again while Redis is unreachable (marked as a retry), so runs go on in
 * memory and their writes commit, in order, when it is back.
 */
export function createBatchCommit(config: BatchCommitConfig): BatchCommit {
  const { connection, appends } = config;
  let givingUp = false;
  // Given up when close() stops waiting: a commit attempt waiting in ioredis's offline queue ends then.
  const attempts = createGiveUp();
  const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

  const commit = async (ops: readonly WriteOp[]): Promise<void> => {
    for (let retry = false; ; retry = true) {
      const multi = connection.client.multi();
      const batch = queueBatch(multi, config.keys, config.retention, ops, retry, config.tokenOf);
      try {
        const replies = (await attempts.race(multi.exec())) ?? [];
        settleReplies(batch, replies, appends, config.refused);
        const failed = replies.find(([error], index) => error && !batch.appends.some((append) => append.reply === index));
        if (failed?.[0]) throw failed[0];
        return;
      } catch (error) {
        const storeError = connection.toStoreError(error);
        if (storeError === error || givingUp) {
          for (const append of batch.appends) {
            appends.forget(append);
            appends.settle(append.op, storeError);
          }
          throw storeError;
        }
        await sleep(config.retryMs);
      }
    }
  };
  return {
    commit,
    giveUp: () => {
      givingUp = true;
      attempts.giveUp(connection.unavailable('the store was closed before Redis came back'));
    },
  };
}

/** Tells each append its outcome, and the fence of each refused write first. */
function settleReplies(batch: QueuedBatch, replies: readonly [Error | null, unknown][], appends: RedisAppends<FrameEvent>, refused: (convId: string) => void): void {
  // Told before any waiter settles: the run stops before its operator hears of the refusal.
  for (const write of batch.fenced) if (replies[write.reply]?.[1] === 1) refused(write.conv_id);
  for (const append of batch.appends) {
    const [, value] = appendReply(append, replies);
    const refusal = appendRefusal(append, value);
    if (refusal instanceof LeaseLostError) refused(refusal.conv_id);
  }
  for (const append of batch.appends) {
    const [error, value] = appendReply(append, replies);
    const refusal = error ?? appendRefusal(append, value);
    if (refusal) appends.forget(append);
    // Redis knows better (another instance may have appended): follow its log from now on.
    if (refusal instanceof StoreSequenceError) appends.follow(refusal.conv_id, refusal.expected - 1);
    appends.settle(append.op, refusal ?? undefined);
  }
}
