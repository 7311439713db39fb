import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { filter, firstValueFrom } from 'rxjs';
import { z } from 'zod';
import { createScriptedEngine, createStepwise, defineTool, type StepwiseConfig } from '../../src/index.js';
import type { Store } from '../../src/core/store.js';
import { createMemoryStore } from '../../src/store/memory.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { SequencedEvent } from '../../src/streams/events.js';

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text.',
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ text }),
});

/** Per conversation: a tool call, then an answer. */
const config = (store: StepwiseConfig['store'], onFrameError?: (error: unknown) => void): StepwiseConfig => ({
  engine: createScriptedEngine({ responses: [{ text: 'calling', tool_calls: [{ id: 'call_1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }] }),
  tools: [echo],
  store,
  ...(onFrameError ? { onFrameError } : {}),
});

const seqsOf = async (store: Store, convId: string): Promise<number[]> =>
  (await store.frames(convId)).frames.map((frame) => frame.seq);
const upTo = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('Stepwise.recover and the frame log', () => {
  it('should seed each stored conversation before recovery publishes, so seq goes on from the stored log', async () => {
    const store = createMemoryStore();
    const first = createStepwise(config(store));
    const paused = first.sessions.open({ conv_id: 'paused' });
    first.controller.enable(paused.session_id);
    const pause = firstValueFrom(first.frames.events$.pipe(filter(({ event }) => event.type === 'paused')));
    paused.start({ prompt: 'go' });
    await pause;
    await first.sessions.open({ conv_id: 'done' }).start({ prompt: 'go' }).result();
    const stored = { paused: await store.lastSeq('paused'), done: await store.lastSeq('done') };
    expect(stored.paused).toBeGreaterThan(0);
    expect(stored.done).toBeGreaterThan(0);
    await first.suspend();

    const errors: unknown[] = [];
    const second = createStepwise(config(store, (error) => errors.push(error)));
    const published: SequencedEvent[] = [];
    second.hub.events$.subscribe((frame) => published.push(frame));
    expect(await second.recover()).toMatchObject({ conversations: 2, runs: 1, pauses: 1 });
    // The first thing recovery publishes, the resumed run's log frame, already continues the log.
    expect(published[0]).toMatchObject({ seq: stored.paused + 1, event: { type: 'log', conv_id: 'paused' } });
    expect(second.frames.lastSeq('paused')).toBe(published.at(-1)?.seq);
    expect(second.frames.lastSeq('done')).toBe(stored.done);

    // A new run of a finished conversation goes on after its stored frames too.
    await second.sessions.get('done')?.start({ prompt: 'again' }).result();
    expect(await seqsOf(store, 'done')).toEqual(upTo(1, await store.lastSeq('done')));
    expect(await store.lastSeq('done')).toBeGreaterThan(stored.done);
    expect(await seqsOf(store, 'paused')).toEqual(upTo(1, await store.lastSeq('paused')));
    expect(errors).toEqual([]);
    second.dispose();
  });
});

describe('a conversation closed and opened again', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('should go on after its stored frames with a durable store (seq never reused)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-reopen-'));
    dirs.push(dir);
    const store = createSqliteStore({ dataDir: dir });
    const errors: unknown[] = [];
    const sw = createStepwise(config(store, (error) => errors.push(error)));
    await sw.sessions.open({ conv_id: 'c' }).start({ prompt: 'go' }).result();
    await store.flush();
    const before = sw.hub.lastSeq('c');
    expect(sw.sessions.close('c')).toBe(true);
    const delivered: number[] = [];
    sw.frames.conversation$('c').subscribe(({ seq }) => delivered.push(seq));
    await sw.sessions.open({ conv_id: 'c' }).start({ prompt: 'again' }).result();
    await store.flush();
    expect(delivered[0]).toBe(before + 1);
    expect(await seqsOf(store, 'c')).toEqual(upTo(1, sw.hub.lastSeq('c')));
    expect(errors).toEqual([]);
    sw.dispose();
    await store.close();
  });

  it('should start over from 1 with the memory store, which drops it with the session', async () => {
    const store = createMemoryStore();
    const errors: unknown[] = [];
    const sw = createStepwise(config(store, (error) => errors.push(error)));
    await sw.sessions.open({ conv_id: 'c' }).start({ prompt: 'go' }).result();
    sw.sessions.close('c');
    expect(await store.lastSeq('c')).toBe(0);
    const delivered: number[] = [];
    sw.frames.conversation$('c').subscribe(({ seq }) => delivered.push(seq));
    await sw.sessions.open({ conv_id: 'c' }).start({ prompt: 'again' }).result();
    expect(delivered).toEqual(upTo(1, sw.hub.lastSeq('c')));
    expect(errors).toEqual([]);
  });
});
