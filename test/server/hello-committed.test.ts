import { AsyncSubject, concat, firstValueFrom, Subject, take, type Observable } from 'rxjs';
import { WebSocket } from 'ws';
import type { Store, StoredFrame } from '../../src/core/store.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { post, startTestServer, type TestServer } from '../helpers/server-harness.js';
import { SemClient, type Frame } from '../helpers/server-ws-client.js';

/**
 * A memory store whose frames commit when `commit$` next emits, and whose `flush` waits for that too:
 * as a SQLite or Redis store whose batch is still being committed.
 */
function createHeldStore(commit$: Observable<unknown>): Store {
  const store = createMemoryStore();
  let pending: Promise<void> = Promise.resolve();
  return {
    ...store,
    appendFrames: (frames: readonly StoredFrame[]) => {
      const done = new AsyncSubject<never>();
      pending = firstValueFrom(commit$, { defaultValue: undefined }).then(() => undefined);
      commit$.pipe(take(1)).subscribe({ complete: () => done.complete() });
      return concat(done, store.appendFrames(frames));
    },
    flush: () => pending.then(() => store.flush()),
  };
}

/** A raw client of the inbox socket: what it received, without waiting for its hello. */
function inboxClient(url: string): { frames: Frame[]; opened: Promise<void>; close(): void } {
  const ws = new WebSocket(url);
  const frames: Frame[] = [];
  ws.on('message', (data) => frames.push((JSON.parse(String(data)) as { event: Frame }).event));
  return { frames, opened: new Promise((done) => ws.once('open', () => done())), close: () => ws.close() };
}

/** docs/protocol.md, Durability: every pause an operator has seen survives a crash, so no hello lists one not yet committed. */
describe('the hellos list committed pauses only', () => {
  let t: TestServer;
  const commit$ = new Subject<void>();
  beforeAll(async () => {
    t = await startTestServer({ debug: true, runtime: { store: createHeldStore(commit$) } });
  });
  afterAll(async () => {
    commit$.complete();
    await t.close();
  });

  it('should leave a pause whose frame is not committed out of both hellos, and tell of it once committed', async () => {
    const owner = await SemClient.connect(`${t.wsBase}/ws?conv_id=held-pause`);
    const chat = post(t.base, '/chat', { prompt: 'x', conv_id: 'held-pause', overrides: { step_mode: true } });
    // Frames commit batch by batch as the test lets them, until the run waits at its pause.
    while (t.server.stepwise.controller.pending().length === 0) {
      commit$.next();
      await new Promise((done) => setImmediate(done));
    }
    const [made] = t.server.stepwise.controller.pending();
    expect((await chat).status).toBe(200);

    const late = await SemClient.connect(`${t.wsBase}/ws?conv_id=held-pause`);
    expect(late.hello.pending_pauses).toEqual([]);
    const inbox = inboxClient(`${t.wsBase}/ws/pauses`);
    await inbox.opened;
    // A ping round trip on another socket: the server has served the inbox's upgrade by now.
    await late.ping();
    expect(inbox.frames.filter((frame) => frame.type === 'ws.hello')).toEqual([]);
    expect(late.sequenced.some((frame) => frame.type === 'debugger.pause')).toBe(false);

    commit$.next();
    const frame = await late.next('debugger.pause');
    expect(frame.pause_id).toBe(made?.pause_id);
    expect((await owner.next('debugger.pause')).pause_id).toBe(made?.pause_id);
    const hello = await waitForHello(inbox.frames);
    expect(hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: made?.pause_id })]);
    const again = await SemClient.connect(`${t.wsBase}/ws?conv_id=held-pause`);
    expect(again.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: made?.pause_id })]);

    await post(t.base, '/chat/cancel', { conv_id: 'held-pause' });
    inbox.close();
    await Promise.all([owner.close(), late.close(), again.close()]);
  });
});

async function waitForHello(frames: Frame[]): Promise<Frame> {
  for (let turn = 0; turn < 1000; turn += 1) {
    const hello = frames.find((frame) => frame.type === 'ws.hello');
    if (hello) return hello;
    await new Promise((done) => setTimeout(done, 5));
  }
  throw new Error('no ws.hello on the inbox socket');
}
