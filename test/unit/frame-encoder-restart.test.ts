import { createEvent, createEventHub, type StepwiseEvent } from '../../src/index.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { createFrameEncoder } from '../../src/server/frame-encoder.js';
import { createFrameLog } from '../../src/streams/frame-log.js';
import type { LogFrame } from '../../src/streams/frame-codec.js';

const run = { conv_id: 'c', session_id: 's', inference_id: 'run1', turn_id: 't' };
const started = (): StepwiseEvent => createEvent('inference-started', run, 0, { model: 'm' });
const delta = (text: string): StepwiseEvent => createEvent('text-delta', run, 0, { delta: text, cumulative: text });
/** The `log` event a run resumed after a restart publishes first (see sessions/recovery.ts). */
const resumed = (iteration: number): StepwiseEvent =>
  createEvent('log', run, 0, { level: 'info', message: 'run run1 resumed after a restart at inference', fields: { resumed: true, next: 'inference', iteration } });

/** One server process's wire over a store that outlives it. */
function processOn(store: ReturnType<typeof createMemoryStore>, lastSeq = 0) {
  const hub = createEventHub();
  if (lastSeq > 0) hub.seed('c', lastSeq);
  const frames = createFrameLog(hub, store);
  const encoder = createFrameEncoder(frames.events$, store);
  const live: string[] = [];
  frames.events$.subscribe((item) => live.push(encoder.encode(item).text));
  return { hub, frames, encoder, live };
}

const encodeAll = async (wire: ReturnType<typeof processOn>, items: readonly LogFrame[]): Promise<string[]> => {
  await wire.encoder.prepare('c', items);
  return items.map((item) => wire.encoder.encode(item).text);
};
const idOf = (text: string): string => (JSON.parse(text) as { event: { id: string } }).event.id;

describe('createFrameEncoder across a restart', () => {
  it('should encode frames of before a restart as they were sent live, and number a resumed run on', async () => {
    const store = createMemoryStore();
    const before = processOn(store);
    [started(), delta('a'), started(), delta('b'), started()].forEach((event) => before.hub.publish(event));
    expect(before.live.map(idOf)).toEqual(['run1:1', 'run1:1', 'run1:2', 'run1:2', 'run1:3']);

    // The third inference was cut by the crash: the run resumes with 2 inferences done and sends it again.
    const after = processOn(store, await store.lastSeq('c'));
    [resumed(2), started(), delta('c')].forEach((event) => after.hub.publish(event));
    expect(after.live.slice(1).map(idOf)).toEqual(['run1:3', 'run1:3']);

    const all = (await after.frames.read('c', 0)).frames;
    expect(all.map((item) => item.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(await encodeAll(after, all)).toEqual([...before.live, ...after.live]);
    // A third process, which learns both earlier ones from the store, says the same.
    const third = processOn(store, await store.lastSeq('c'));
    expect(await encodeAll(third, all)).toEqual([...before.live, ...after.live]);
  });
});
