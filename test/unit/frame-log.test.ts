import { marbles } from 'rxjs-marbles/jest';
import { AsyncSubject, concat, map, Subject, take, throwError, timer, type Observable } from 'rxjs';
import { createEvent, createEventHub, type StepwiseEvent } from '../../src/index.js';
import type { Store, StoredFrame } from '../../src/core/store.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { createFrameLog } from '../../src/streams/frame-log.js';
import type { SequencedEvent } from '../../src/streams/events.js';

const origin = (conv_id: string) => ({ conv_id, session_id: `s-${conv_id}`, inference_id: 'i', turn_id: 't' });
const log = (conv_id: string, message = 'x'): StepwiseEvent => createEvent('log', origin(conv_id), 0, { level: 'info', message });
const labels = map(({ seq, event }: SequencedEvent) => `${event.conv_id}${seq}`);

/**
 * Completes once `commit$` first emits after the call, also for a late subscriber: as an SQLite
 * batch, which starts committing when it is queued, whoever waits for it.
 */
function committedOn(commit$: Observable<unknown>): Observable<never> {
  const done = new AsyncSubject<never>();
  commit$.pipe(take(1)).subscribe({ complete: () => done.complete() });
  return done.asObservable();
}

/** A memory store whose appends commit only when `commit$` says so. */
function createHeldStore(commit$: Observable<unknown>): Store & { readonly appended: () => string[] } {
  const store = createMemoryStore();
  const appended: string[] = [];
  return {
    ...store,
    appendFrames: (frames: readonly StoredFrame[]) => {
      for (const { seq, event } of frames) appended.push(`${event.conv_id}${seq}`);
      return concat(committedOn(commit$), store.appendFrames(frames));
    },
    appended: () => appended,
  };
}

describe('createFrameLog', () => {
  it('should deliver each frame only once its commit completed, in hub order', marbles((m) => {
    const hub = createEventHub();
    // Each append commits 3 ms after it was made, as a batch written in the background.
    const frames = createFrameLog(hub, createHeldStore(timer(3)));
    m.hot('a-b-a', { a: 'a', b: 'b' }).subscribe((conv) => hub.publish(log(conv)));
    m.expect(frames.events$.pipe(labels)).toBeObservable('---x-y-z', { x: 'a1', y: 'b1', z: 'a2' });
    m.expect(frames.conversation$('a').pipe(labels)).toBeObservable('---x---z', { x: 'a1', z: 'a2' });
  }));

  it('should never let a later commit overtake an earlier one', () => {
    const hub = createEventHub();
    const commits = [new Subject<void>(), new Subject<void>(), new Subject<void>()];
    let next = 0;
    const store = createMemoryStore();
    const frames = createFrameLog(hub, {
      ...store,
      appendFrames: (batch) => concat(committedOn(commits[next++] as Subject<void>), store.appendFrames(batch)),
    });
    const seen: string[] = [];
    frames.events$.pipe(labels).subscribe((label) => seen.push(label));
    ['a', 'a', 'a'].forEach((conv) => hub.publish(log(conv)));
    commits[2]?.next();
    commits[1]?.next();
    expect(seen).toEqual([]);
    expect(frames.lastSeq('a')).toBe(0);
    commits[0]?.next();
    expect(seen).toEqual(['a1', 'a2', 'a3']);
    expect(frames.lastSeq('a')).toBe(3);
  });

  it('should say last_seq and list frames of before only as far as they are committed', () => {
    const hub = createEventHub();
    const commit$ = new Subject<void>();
    const store = createHeldStore(commit$);
    const frames = createFrameLog(hub, store);
    hub.publish(log('a'));
    commit$.next();
    hub.publish(log('a'));
    hub.publish(log('a'));
    expect(store.appended()).toEqual(['a1', 'a2', 'a3']);
    expect(hub.lastSeq('a')).toBe(3);
    expect(frames.lastSeq('a')).toBe(1);
    expect(frames.buffered('a', 0)?.frames.map((frame) => frame.seq)).toEqual([1]);
    commit$.next();
    expect(frames.lastSeq('a')).toBe(3);
    expect(frames.buffered('a', 1)?.frames.map((frame) => frame.seq)).toEqual([2, 3]);
  });

  it('should report a frame the store refused, deliver none of it, and go on with the other conversations', () => {
    const hub = createEventHub();
    const store = createMemoryStore();
    const refused = new Error('disk full');
    const errors: unknown[] = [];
    const frames = createFrameLog(
      hub,
      { ...store, appendFrames: (batch) => (batch[0]?.event.conv_id === 'bad' ? throwError(() => refused) : store.appendFrames(batch)) },
      { onError: (error) => errors.push(error) },
    );
    const seen: string[] = [];
    frames.events$.pipe(labels).subscribe((label) => seen.push(label));
    hub.publish(log('bad'));
    hub.publish(log('ok'));
    expect(errors).toEqual([refused]);
    expect(seen).toEqual(['ok1']);
    expect(frames.lastSeq('bad')).toBe(0);
  });

  it('should read frames the hub no longer buffers from the store', async () => {
    const hub = createEventHub({ bufferSize: 2 });
    const store = createMemoryStore();
    const frames = createFrameLog(hub, store);
    for (let i = 0; i < 6; i += 1) hub.publish(log('a', `m${i}`));
    expect(frames.buffered('a', 0)).toBeUndefined();
    expect((await frames.read('a', 0)).frames.map((frame) => frame.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await frames.read('a', 1, 2)).toMatchObject({ lastSeq: 6, frames: [{ seq: 2 }, { seq: 3 }] });
    // From the buffer when it holds them all: the same frames.
    expect((await frames.read('a', 4)).frames).toEqual(frames.buffered('a', 4)?.frames);
  });

  it('should count a live subscriber as watching, and stop delivering when disposed', () => {
    const hub = createEventHub();
    const frames = createFrameLog(hub, createMemoryStore());
    const seen: string[] = [];
    const subscription = frames.conversation$('a').pipe(labels).subscribe((label) => seen.push(label));
    expect(frames.isWatched('a')).toBe(true);
    hub.publish(log('a'));
    frames.dispose();
    hub.publish(log('a'));
    subscription.unsubscribe();
    expect(seen).toEqual(['a1']);
    expect(frames.isWatched('a')).toBe(false);
  });
});
