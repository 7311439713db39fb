import { Observable } from 'rxjs';
import type { FrameEvent, StoredFrame, WireFrame } from '../../core/store.js';
import type { Connection } from './connection.js';
import type { RedisKeys } from './keys.js';
import { frameOf } from './reads.js';

export interface FrameTailConfig {
  /** One XREAD BLOCK waits this long before it asks again, ms. */
  readonly tailBlockMs: number;
  /** Wait before reading again after Redis could not be reached, ms. */
  readonly retryMs: number;
}

/** `tail$(convId, sinceSeq)`, and a way to end every tail when the store closes. */
export interface FrameTail<E extends FrameEvent> {
  (convId: string, sinceSeq?: number): Observable<StoredFrame<E> | WireFrame>;
  /** Completes every live tail (the store is closing). */
  closeAll(): void;
}

/** Entries a single XREAD returns at most: a tail far behind catches up in pages. */
const PAGE = 500;

/**
 * The live read of a conversation's frames, for fan-out across instances: XREAD BLOCK on the
 * conversation's stream from the last id seen. Entry ids are `<seq>-0`, so "after the last id" is
 * "after the last seq": each frame comes once, in order, whoever appended it; after Redis comes back
 * it goes on from the same place. Each subscription holds a connection of its own, because a blocked
 * XREAD holds its connection until it returns.
 */
export function createFrameTail<E extends FrameEvent>(connection: Connection, keys: RedisKeys, config: FrameTailConfig): FrameTail<E> {
  // Each live tail's way to end (the store closing completes them).
  const open = new Set<() => void>();

  const tail = (convId: string, sinceSeq = 0): Observable<StoredFrame<E> | WireFrame> =>
    new Observable<StoredFrame<E> | WireFrame>((subscriber) => {
      if (!(Number.isInteger(sinceSeq) && sinceSeq >= 0)) {
        subscriber.error(new RangeError(`tail$: sinceSeq must be an integer >= 0, got ${String(sinceSeq)}`));
        return undefined;
      }
      const stream = keys.conversation(convId).frames;
      const reader = connection.duplicate();
      const end = (): void => subscriber.complete();
      open.add(end);
      let last = sinceSeq;
      let stopped = false;

      const readOnce = async (): Promise<void> => {
        for (const [, entries] of await readPage(reader, stream, last, config.tailBlockMs)) {
          for (const entry of entries) {
            const frame = frameOf<E>(convId, entry);
            if (frame.seq <= last) continue;
            last = frame.seq;
            subscriber.next(frame);
            if (stopped) return;
          }
        }
      };
      void readUntilStopped(readOnce, () => stopped, (error) => subscriber.error(error), config.retryMs);
      return () => {
        stopped = true;
        open.delete(end);
        reader.disconnect();
      };
    });

  return Object.assign(tail, {
    closeAll: () => {
      for (const end of [...open]) end();
    },
  });
}

/** One page of the stream after `lastSeq`, waiting up to `blockMs` for one to come. */
async function readPage(reader: ReturnType<Connection['duplicate']>, stream: string, lastSeq: number, blockMs: number): Promise<[string, [string, string[]][]][]> {
  const reply = (await reader.xread('COUNT', PAGE, 'BLOCK', blockMs, 'STREAMS', stream, `${lastSeq}-0`)) as [string, [string, string[]][]][] | null;
  return reply ?? [];
}

/**
 * Reads until stopped, through outages: a tail outlives Redis going away, so a failed read is retried
 * from the same seq after `retryMs`. Only a frame that cannot be read (a SyntaxError) ends it, by `fail`:
 * reading again would meet the same frame.
 */
async function readUntilStopped(readOnce: () => Promise<void>, isStopped: () => boolean, fail: (error: unknown) => void, retryMs: number): Promise<void> {
  while (!isStopped()) {
    try {
      await readOnce();
    } catch (error) {
      if (isStopped()) return;
      if (error instanceof SyntaxError) {
        fail(error);
        return;
      }
      // Redis is away (or the read timed out): ask again from the same seq once it may be back.
      await new Promise((done) => setTimeout(done, retryMs));
    }
  }
}
