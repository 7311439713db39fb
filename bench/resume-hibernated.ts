import { WebSocket } from 'ws';
import type { Store } from '../src/core/store.js';
import type { StepwiseHttpServer } from '../src/server/app.js';
import type { LoadedLib } from './lib.js';
import { createJsonPoster } from './post-json.js';
import { createEchoTool, createStepEngine, within } from './scenario.js';

/**
 * `resume_hibernated` (docs/protocol.md, Durability): ms from `POST /debug/continue` of a pause to the next
 * WebSocket frame of its conversation (its `debugger.resume`), as `resume_wire` times one; `toPause` is
 * the same continue to the run's next `debugger.pause`, which a hibernated run reaches only once rebuilt
 * from its checkpoint and through its tool. Two forms, each on a server with a SQLite store in this
 * process, with `hibernateAfterMs` 50 (every pause has hibernated when continued) or Infinity (the
 * baseline: none has):
 * - `busy`: `samples` conversations paused at once and left until hibernated, then continued one after
 *   another (each once the previous one's run paused again), after `WARMUP` untimed ones: a server
 *   answering many approvers, as `resume_wire` measures a busy one.
 * - `idle`: one conversation stepped through with 150 ms of idle before each continue. An idle process
 *   answers its first request after a pause much slower than a busy one: on this kind of machine a bare
 *   node:http echo takes several times as long after 150 ms of idle as back to back (bench/HISTORY.md),
 *   so this form measures the machine waking as much as the resume.
 */
export type ResumeForm = 'busy' | 'idle';

export interface ResumeSamples {
  readonly toFrame: number[];
  readonly toPause: number[];
}

const HOUR_MS = 3_600_000;
const IDLE_MS = 150;
const WARMUP = 10;

export async function measureResume(loaded: LoadedLib, dataDir: string, samples: number, hibernateAfterMs: number, form: ResumeForm): Promise<ResumeSamples> {
  const { createServer } = (await import(new URL('server/app.js', loaded.srcUrl).href)) as typeof import('../src/server/app.js');
  const { lib, stores } = loaded;
  const counted = countingReads(stores.createSqliteStore({ dataDir }));
  const steps = form === 'idle' ? samples + 10 : 2;
  const runtime = { engine: createStepEngine(lib, steps), tools: [createEchoTool(lib)], pauseTimeoutMs: HOUR_MS, maxIterations: steps + 20, hibernateAfterMs, store: counted.store };
  const server: StepwiseHttpServer = createServer({ debug: true, store: counted.store, runtime });
  await new Promise<void>((done) => server.http.listen(0, '127.0.0.1', done));
  const port = (server.http.address() as { port: number }).port;
  const poster = createJsonPoster(`http://127.0.0.1:${port}`);
  const open = (convId: string): Promise<Conversation> => follow(`ws://127.0.0.1:${port}/ws?conv_id=${convId}`, convId, poster.post);
  try {
    if (form === 'idle') return await stepThrough(await open('hib'), samples);
    const conversations = await Promise.all(Array.from({ length: samples + WARMUP }, (_, i) => open(`hib-${i}`)));
    await Promise.all(conversations.map((conversation) => conversation.start()));
    // Hibernation reads each pause's checkpoint once: all of them read means all of them asleep.
    if (hibernateAfterMs !== Infinity) await within(waitFor(() => counted.reads() >= conversations.length), 60_000, 'the hibernation of every paused run');
    else await new Promise((done) => setTimeout(done, 200));
    return await continueEach(conversations);
  } finally {
    poster.close();
    await server.close();
    await counted.store.close();
  }
}

/** A conversation's frames as one client follows them, and its run's current pause. */
interface Conversation {
  readonly frames: Array<{ readonly at: number; readonly text: string }>;
  /** Starts its run in step mode and waits for its first pause. */
  start(): Promise<void>;
  /** Continues the current pause: when the next frame came, and when the run paused again. */
  next(): Promise<{ toFrame: number; toPause: number }>;
  close(): void;
}

async function follow(url: string, convId: string, post: ReturnType<typeof createJsonPoster>['post']): Promise<Conversation> {
  const ws = new WebSocket(url);
  await new Promise((done, fail) => (ws.once('message', done), ws.once('error', fail)));
  const frames: Array<{ at: number; text: string }> = [];
  ws.on('message', (data) => frames.push({ at: performance.now(), text: data.toString() }));
  let pauseId = '';
  const nextPause = async (from: number): Promise<number> => {
    await within(waitFor(() => frames.findIndex((frame, i) => i >= from && isPause(frame.text)) >= 0), 10_000, `the next pause of ${convId}`);
    const found = frames.find((frame, i) => i >= from && isPause(frame.text)) as { at: number; text: string };
    pauseId = (JSON.parse(found.text) as { event: { pause_id: string } }).event.pause_id;
    return found.at;
  };
  return {
    frames,
    start: async () => {
      await post('/chat', { prompt: 'go', conv_id: convId, overrides: { step_mode: true } });
      await nextPause(0);
    },
    next: async () => {
      const seen = frames.length;
      const sent = performance.now();
      await post('/debug/continue', { pause_id: pauseId });
      const pausedAt = await nextPause(seen);
      return { toFrame: (frames[seen]?.at ?? NaN) - sent, toPause: pausedAt - sent };
    },
    close: () => ws.close(),
  };
}

async function continueEach(conversations: readonly Conversation[]): Promise<ResumeSamples> {
  const samples: ResumeSamples = { toFrame: [], toPause: [] };
  for (const [index, conversation] of conversations.entries()) {
    const { toFrame, toPause } = await conversation.next();
    conversation.close();
    if (index < WARMUP) continue;
    samples.toFrame.push(toFrame);
    samples.toPause.push(toPause);
  }
  return samples;
}

async function stepThrough(conversation: Conversation, samples: number): Promise<ResumeSamples> {
  const result: ResumeSamples = { toFrame: [], toPause: [] };
  await conversation.start();
  for (let i = 0; i < samples; i += 1) {
    // Well past hibernateAfterMs (50): the run has left memory.
    await new Promise((done) => setTimeout(done, IDLE_MS));
    const { toFrame, toPause } = await conversation.next();
    result.toFrame.push(toFrame);
    result.toPause.push(toPause);
  }
  conversation.close();
  return result;
}

const isPause = (text: string): boolean => text.includes('"type":"debugger.pause"');

async function waitFor(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((wake) => setTimeout(wake, 1));
}

/** A SQLite store whose checkpoint reads (hibernation's one read per pause) are counted. */
export function countingReads(store: Store): { store: Store; reads: () => number } {
  let reads = 0;
  const checkpoints: Store['checkpoints'] = (convId) => {
    reads += 1;
    return store.checkpoints(convId);
  };
  return { store: Object.assign(Object.create(store) as Store, { checkpoints }), reads: () => reads };
}
