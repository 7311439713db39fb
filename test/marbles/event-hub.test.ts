import { marbles, type Context } from 'rxjs-marbles/jest';
import { map, take } from 'rxjs';
import { createEvent, createEventHub, type StepwiseEvent } from '../../src/index.js';
import { createProbe } from './helpers.js';

const origin = (conv_id: string) => ({ conv_id, session_id: `s-${conv_id}`, inference_id: 'i', turn_id: 't' });
const log = (conv_id: string, message: string): StepwiseEvent => createEvent('log', origin(conv_id), 0, { level: 'info', message });
const seqs = map(({ seq, event }: { seq: number; event: StepwiseEvent }) => `${event.conv_id}${seq}`);

/** A hub fed a frame of conversation `a` at frames 1, 3, 5 and 7, and a probe to log its views' subscriptions. */
function fedHub(m: Pick<Context, 'cold' | 'hot'>) {
  const hub = createEventHub();
  m.hot('-a-a-a-a').subscribe((conv: string) => hub.publish(log(conv, 'x')));
  return { hub, views: createProbe(m) };
}

describe('createEventHub', () => {
  it('should number each conversation from 1, consecutively', () => {
    const hub = createEventHub();
    const seen: string[] = [];
    hub.events$.pipe(seqs).subscribe((label) => seen.push(label));
    ['a', 'b', 'a', 'a', 'b'].forEach((conv) => hub.publish(log(conv, 'x')));
    expect(seen).toEqual(['a1', 'b1', 'a2', 'a3', 'b2']);
    expect(hub.lastSeq('a')).toBe(3);
  });

  it('should go on from the last seq a store says for a conversation it holds nothing of, also after forgetting it', () => {
    const stored = new Map([['a', 41]]);
    const hub = createEventHub({ lastSeqOf: (convId) => stored.get(convId) ?? 0 });
    const seen: string[] = [];
    hub.events$.pipe(seqs).subscribe((label) => seen.push(label));
    expect(hub.lastSeq('a')).toBe(41);
    expect(hub.buffered('a')).toEqual({ frames: [], lastSeq: 41 });
    ['a', 'b', 'a'].forEach((conv) => hub.publish(log(conv, 'x')));
    // Let go of, as a hibernated conversation's buffer is: the store has its frames, and says so.
    stored.set('a', 43);
    hub.forget('a');
    expect(hub.lastSeq('a')).toBe(43);
    hub.publish(log('a', 'x'));
    expect(seen).toEqual(['a42', 'b1', 'a43', 'a44']);
  });

  it('should give a late subscriber the frames after since_seq, then live ones, without gap or duplicate', marbles((m) => {
    const hub = createEventHub();
    const publishes = m.hot('a-b-c-----d-e', { a: 'a', b: 'b', c: 'a', d: 'a', e: 'b' });
    publishes.subscribe((conv) => hub.publish(log(conv, 'x')));
    m.expect(hub.replay$('a', 1).pipe(seqs), '-----^').toBeObservable('-----a----b', { a: 'a2', b: 'a3' });
    m.expect(hub.replay$('a', 0).pipe(seqs), '-----^').toBeObservable('-----(xy)-d', { x: 'a1', y: 'a2', d: 'a3' });
  }));

  it('should not lose or double frames published while the buffer is being replayed', () => {
    const hub = createEventHub();
    hub.publish(log('a', 'one'));
    hub.publish(log('a', 'two'));
    const seen: number[] = [];
    hub.replay$('a', 0).subscribe(({ seq }) => {
      seen.push(seq);
      // A subscriber that publishes while being replayed to (e.g. it continues a pause it just saw).
      if (seq === 1) hub.publish(log('a', 'three'));
    });
    hub.publish(log('a', 'four'));
    expect(seen).toEqual([1, 2, 3, 4]);
  });

  it('should deliver events published from inside a subscriber after the current one, to everyone in order', () => {
    const hub = createEventHub();
    const first: number[] = [];
    const second: number[] = [];
    hub.events$.subscribe(({ seq }) => {
      first.push(seq);
      if (seq === 1) hub.publish(log('a', 'reaction'));
    });
    hub.events$.subscribe(({ seq }) => second.push(seq));
    hub.publish(log('a', 'cause'));
    expect(first).toEqual([1, 2]);
    expect(second).toEqual([1, 2]);
  });

  it('should keep a bounded buffer per conversation and answer hydrate from it', () => {
    const hub = createEventHub({ bufferSize: 3 });
    for (let i = 0; i < 10; i += 1) hub.publish(log('a', `m${i}`));
    expect(hub.buffered('a').frames.map((f) => f.seq)).toEqual([8, 9, 10]);
    expect(hub.buffered('a', 8).frames.map((f) => f.seq)).toEqual([9, 10]);
    expect(hub.buffered('a', 0, 2)).toMatchObject({ lastSeq: 10, frames: [{ seq: 8 }, { seq: 9 }] });
    expect(hub.buffered('unknown')).toEqual({ frames: [], lastSeq: 0 });
  });

  it('should derive a per-conversation view', () => {
    const hub = createEventHub();
    const conv: string[] = [];
    hub.conversation$('b').pipe(seqs).subscribe((l) => conv.push(l));
    ['a', 'b', 'a'].forEach((c) => hub.publish(log(c, 'x')));
    expect(conv).toEqual(['b1']);
  });

  it('should stop watching a conversation when the consumer of its view completes', marbles((m) => {
    const { hub, views } = fedHub(m);
    m.expect(views.watch(hub.conversation$('a')).pipe(take(2), seqs)).toBeObservable('-x-(y|)', { x: 'a1', y: 'a2' });
    m.expect(views.log).toHaveSubscriptions('^--!');
    m.scheduler.schedule(() => expect(hub.isWatched('a')).toBe(false), 4);
  }));

  it('should stop watching a conversation when the consumer of its replay errors', marbles((m) => {
    const { hub, views } = fedHub(m);
    const failing = views.watch(hub.replay$('a', 0)).pipe(
      map(({ seq }) => {
        if (seq === 2) throw 'a bug in the consumer';
        return seq;
      }),
    );
    m.expect(failing).toBeObservable('-x-#', { x: 1 }, 'a bug in the consumer');
    m.expect(views.log).toHaveSubscriptions('^--!');
    m.scheduler.schedule(() => expect(hub.isWatched('a')).toBe(false), 4);
  }));

  it('should stop watching a conversation when its view is unsubscribed (a socket closed)', marbles((m) => {
    const { hub, views } = fedHub(m);
    m.expect(views.watch(hub.replay$('a', 0)).pipe(seqs), '^----!').toBeObservable('-x-y-', { x: 'a1', y: 'a2' });
    m.expect(views.log).toHaveSubscriptions('^----!');
    m.scheduler.schedule(() => expect(hub.isWatched('a')).toBe(true), 4);
    m.scheduler.schedule(() => expect(hub.isWatched('a')).toBe(false), 6);
  }));

  it('should refuse a bad buffer size at factory time', () => {
    expect(() => createEventHub({ bufferSize: 0 })).toThrow(/bufferSize/);
  });
});
