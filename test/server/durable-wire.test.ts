import { AsyncSubject, concat, Subject, take, throwError, type Observable } from 'rxjs';
import type { Store, StoredFrame } from '../../src/core/store.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { createEvent } from '../../src/streams/events.js';
import { get, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';

/** A memory store whose appends commit when `commit$` next emits (as an SQLite batch, whoever waits for it). */
function createHeldStore(commit$: Observable<unknown>): Store {
  const store = createMemoryStore();
  return {
    ...store,
    appendFrames: (frames: readonly StoredFrame[]) => {
      if (frames[0]?.event.conv_id === 'refused') return throwError(() => new Error('disk full'));
      const done = new AsyncSubject<never>();
      commit$.pipe(take(1)).subscribe({ complete: () => done.complete() });
      return concat(done, store.appendFrames(frames));
    },
  };
}

const log = (conv_id: string, message: string) =>
  createEvent('log', { conv_id, session_id: 's', inference_id: 'i', turn_id: 't' }, 0, { level: 'info', message });

/** docs/protocol.md, Durability, on the wire: a frame is committed to the store before any client receives it. */
describe('the WebSocket and /hydrate over a store that commits later', () => {
  let t: TestServer;
  const commit$ = new Subject<void>();
  const errors: unknown[] = [];
  beforeAll(async () => {
    t = await startTestServer({ runtime: { store: createHeldStore(commit$) }, onError: (error) => errors.push(error) });
  });
  afterAll(() => t.close());
  const publish = (conv: string, message: string) => t.server.stepwise.hub.publish(log(conv, message));
  const hydrate = async (conv: string) => (await get(t.base, `/hydrate?conv_id=${conv}`)).body;

  it('should send no frame, and count none in last_seq, before its commit completes', async () => {
    const live = await SemClient.connect(`${t.wsBase}/ws?conv_id=held`);
    publish('held', 'one');
    publish('held', 'two');
    await live.ping();
    expect(live.sequenced).toEqual([]);
    expect(await hydrate('held')).toMatchObject({ frames: [], last_seq: 0 });
    const joined = await SemClient.connect(`${t.wsBase}/ws?conv_id=held&since_seq=0`);
    expect(joined.hello.last_seq).toBe(0);

    commit$.next();
    await live.waitFor((frame) => frame.seq === 2);
    await joined.waitFor((frame) => frame.seq === 2);
    expect((await hydrate('held')).last_seq).toBe(2);

    // A client joining while frame 3 is being committed gets 1 and 2 now, and 3 once, when it is committed.
    publish('held', 'three');
    const late = await SemClient.connect(`${t.wsBase}/ws?conv_id=held&since_seq=0`);
    await late.ping();
    expect(late.sequenced.map((frame) => frame.message)).toEqual(['one', 'two']);
    commit$.next();
    for (const client of [live, joined, late]) {
      await client.waitFor((frame) => frame.seq === 3);
      await client.ping();
      expect(client.sequenced.map((frame) => [frame.seq, frame.message])).toEqual([[1, 'one'], [2, 'two'], [3, 'three']]);
    }
    expect((await hydrate('held')).frames.map((frame: { event: { seq: number } }) => frame.event.seq)).toEqual([1, 2, 3]);
    await Promise.all([live.close(), joined.close(), late.close()]);
  });

  it('should report a frame the store refused, send it to no one, and keep serving', async () => {
    const client = await SemClient.connect(`${t.wsBase}/ws?conv_id=refused`);
    publish('refused', 'lost');
    await client.ping();
    expect(client.sequenced).toEqual([]);
    expect(errors).toEqual([new Error('disk full')]);
    expect((await hydrate('refused')).frames).toEqual([]);
    expect((await get(t.base, '/healthz')).status).toBe(200);
    await client.close();
  });
});
