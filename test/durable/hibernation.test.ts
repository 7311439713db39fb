import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createScriptedEngine, createSequentialIds, createStepwise, defineTool, type PauseInfo, type Stepwise, type StepwiseConfig, type StepwiseEvent } from '../../src/index.js';
import type { Store } from '../../src/core/store.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text.',
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ text }),
});

/** What an operator (or the clock) does at a pause; `sw` is the runtime, `conv` the conversation. */
type Act = (sw: Stepwise, pause: PauseInfo) => void;

/**
 * A SQLite store that counts the checkpoint reads hibernation makes, and the synchronous ones a woken
 * run makes; `readsAtOnce: false` hides those, as a store without synchronous reads (Redis) has none.
 */
function countingStore(dir: string, readsAtOnce = true): { store: Store; reads: () => number; rereads: () => number } {
  const store = createSqliteStore({ dataDir: dir });
  let reads = 0;
  let rereads = 0;
  const checkpoints: Store['checkpoints'] = (convId) => {
    reads += 1;
    return store.checkpoints(convId);
  };
  const checkpointNow: Store['checkpointNow'] = (convId, inferenceId) => {
    rereads += 1;
    return store.checkpointNow?.(convId, inferenceId);
  };
  return { store: Object.assign(Object.create(store) as Store, { checkpoints, checkpointNow: readsAtOnce ? checkpointNow : undefined }), reads: () => reads, rereads: () => rereads };
}

/** The run's next pause, once pending: one not acted on yet. */
async function nextPause(sw: Stepwise, acted: Set<string>): Promise<PauseInfo> {
  for (let tries = 0; tries < 200; tries += 1) {
    const pause = sw.controller.pending().find((info) => !acted.has(info.pause_id));
    if (pause) {
      acted.add(pause.pause_id);
      return pause;
    }
    await sleep(5);
  }
  throw new Error('the run did not pause');
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Wall-clock fields differ between two runs; everything else must not. */
const TIMED = new Set(['at', 'at_ms', 'deadline_ms', 'created_at', 'duration_ms', 'updated_at']);
const untimed = (value: unknown): unknown => JSON.parse(JSON.stringify(value, (key, field) => (TIMED.has(key) ? undefined : field)));

/**
 * One run in step mode on a fresh SQLite store, `acts` applied at its pauses in turn, each once the
 * pause is `restMs` old: with `hibernateAfterMs` below that, each pause has hibernated first.
 */
async function runThrough(hibernateAfterMs: number, acts: readonly Act[], extra: Partial<StepwiseConfig> = {}, readsAtOnce = true) {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-hibernate-'));
  const { store, reads, rereads } = countingStore(dir, readsAtOnce);
  const sw = createStepwise({
    engine: createScriptedEngine({ responses: [{ text: 'calling', tool_calls: [{ id: 'call_1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }] }),
    tools: [echo],
    ids: createSequentialIds(),
    store,
    hibernateAfterMs,
    ...extra,
  });
  const events: StepwiseEvent[] = [];
  sw.hub.events$.subscribe(({ event }) => events.push(event));
  const session = sw.sessions.open({ conv_id: 'c' });
  sw.controller.enable(session.session_id);
  const handle = session.start({ prompt: 'go' });
  const hibernations: number[] = [];
  const acted = new Set<string>();
  for (const act of acts) {
    const pause = await nextPause(sw, acted);
    const before = reads();
    await sleep(80);
    hibernations.push(reads() - before);
    // Pending for everyone whether hibernated or not, and the session still running its turn.
    expect(sw.controller.pending()).toEqual([pause]);
    expect(session.running).toBe(true);
    act(sw, pause);
  }
  const result = await handle.result();
  await store.flush();
  const decisions = await store.decisions('c');
  sw.dispose();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return { events: untimed(events), decisions: untimed(decisions), result: untimed(result), turns: untimed(session.turns()), hibernations, rereads: rereads() };
}

/** The same run resident and hibernated at every pause: every id, frame, decision and the result agree. */
async function expectSameAsResident(acts: readonly Act[], extra: Partial<StepwiseConfig> = {}) {
  const resident = await runThrough(Infinity, acts, extra);
  const hibernated = await runThrough(20, acts, extra);
  expect(resident.hibernations.every((n) => n === 0)).toBe(true);
  expect(hibernated.hibernations.every((n) => n === 1)).toBe(true);
  expect(hibernated.events).toEqual(resident.events);
  expect(hibernated.decisions).toEqual(resident.decisions);
  expect(hibernated.result).toEqual(resident.result);
  expect(hibernated.turns).toEqual(resident.turns);
  return hibernated;
}

const continueAs = (by: string): Act => (sw, pause) => expect(sw.controller.submit({ pause_id: pause.pause_id, by })).toMatchObject({ ok: true });

describe('hibernation (createStepwise with hibernateAfterMs, SQLite store)', () => {
  it('should rebuild a hibernated run on continue at each pause, with the same frames, audit and result', async () => {
    const { result } = await expectSameAsResident([continueAs('alice'), continueAs('bob')]);
    expect(result).toMatchObject({ status: 'completed', text: 'done' });
  });

  it('should keep no checkpoint of a hibernated run with a store that reads at once, reading it back when the run wakes, and one of its own with a store that does not', async () => {
    const acts = [continueAs('alice'), continueAs('bob')];
    const resident = await runThrough(Infinity, acts);
    const readBack = await runThrough(20, acts);
    const keptHere = await runThrough(20, acts, {}, false);
    expect(resident.rereads).toBe(0);
    // Each of the two wakes read its checkpoint from the store; nothing else needed it.
    expect(readBack.rereads).toBe(2);
    expect(keptHere.rereads).toBe(0);
    for (const hibernated of [readBack, keptHere]) {
      expect(hibernated.hibernations).toEqual([1, 1]);
      expect(hibernated.events).toEqual(resident.events);
      expect(hibernated.decisions).toEqual(resident.decisions);
      expect(hibernated.result).toEqual(resident.result);
      expect(hibernated.turns).toEqual(resident.turns);
    }
  });

  it('should apply a deny and edits of arguments and results decided while hibernated', async () => {
    await expectSameAsResident([(sw, pause) => sw.controller.submit({ pause_id: pause.pause_id, action: 'deny', reason: 'no' }), continueAs('local')]);
    const { turns, decisions } = await expectSameAsResident([
      (sw, pause) => sw.controller.submit({ pause_id: pause.pause_id, action: 'edit', edits: { call_1: { text: 'edited' } } }),
      (sw, pause) => sw.controller.submit({ pause_id: pause.pause_id, action: 'edit', results: { call_1: { text: 'replaced' } } }),
    ]);
    // The model saw the replaced result; the audit trail keeps both edits with what they replaced.
    expect(JSON.stringify(turns)).toContain('replaced');
    expect(decisions).toMatchObject([{ reason: 'edited', phase: 'after_inference' }, { reason: 'edited', phase: 'after_tools' }]);
  });

  it('should resolve a hibernated pause at its deadline with the timeout action', async () => {
    const wait: Act = () => undefined;
    const { result } = await expectSameAsResident([wait], { pauseTimeoutMs: 300, timeoutAction: 'abort' });
    expect(result).toMatchObject({ status: 'failed' });
  });

  it("should give a hibernated run's open pause to its handle, though its replay buffer went to the store", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-hibernate-'));
    const { store, reads } = countingStore(dir);
    const sw = createStepwise({
      engine: createScriptedEngine({ responses: [{ text: 'calling', tool_calls: [{ id: 'call_1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }] }),
      tools: [echo],
      store,
      hibernateAfterMs: 20,
    });
    const session = sw.sessions.open({ conv_id: 'c' });
    sw.controller.enable(session.session_id);
    const handle = session.start({ prompt: 'go' });
    const pause = await nextPause(sw, new Set());
    await sleep(80);
    expect(reads()).toBe(1);
    // No client followed the conversation: its frames are replayed from the store from now on.
    expect(sw.hub.buffered('c').frames).toEqual([]);
    expect(await sw.frames.read('c', 0)).toMatchObject({ frames: expect.arrayContaining([expect.objectContaining({ seq: 1 })]) });
    expect(await handle.nextPause()).toEqual(pause);
    sw.controller.submit({ pause_id: pause.pause_id });
    const afterTools = await handle.nextPause();
    expect(afterTools).toMatchObject({ phase: 'after_tools', inference_id: pause.inference_id });
    sw.controller.submit({ pause_id: afterTools?.pause_id ?? '' });
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'done' });
    await store.flush();
    // Seq went on from the frames that left the buffer: none reused, none skipped.
    expect((await store.frames('c')).frames.map((frame) => frame.seq)).toEqual(Array.from({ length: sw.hub.lastSeq('c') }, (_, i) => i + 1));
    sw.dispose();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('should rebuild a run started with its own engine and tools with those, not the session\'s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stepwise-hibernate-'));
    const { store, reads } = countingStore(dir);
    const shout = defineTool({ name: 'shout', description: 'Shouts.', parameters: z.object({ text: z.string() }), execute: async ({ text }) => ({ loud: text.toUpperCase() }) });
    const sw = createStepwise({ engine: createScriptedEngine({ responses: [{ text: 'the runtime engine' }] }), tools: [echo], store, hibernateAfterMs: 20 });
    const session = sw.sessions.open({ conv_id: 'c' });
    sw.controller.enable(session.session_id);
    const own = createScriptedEngine({ responses: [{ text: 'calling', tool_calls: [{ id: 'call_1', name: 'shout', arguments: { text: 'hi' } }] }, { text: 'own engine done' }] });
    const handle = session.start({ prompt: 'go', engine: own, tools: [shout] });
    const acted = new Set<string>();
    for (let i = 0; i < 2; i += 1) {
      const pause = await nextPause(sw, acted);
      await sleep(80);
      sw.controller.submit({ pause_id: pause.pause_id });
    }
    expect(reads()).toBe(2);
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'own engine done' });
    expect(result.turn.blocks).toContainEqual(expect.objectContaining({ kind: 'tool_use', payload: expect.objectContaining({ result: { loud: 'HI' } }) }));
    sw.dispose();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('should rebuild the run when step mode is disabled, and end it where it stands when cancelled', async () => {
    const { result } = await expectSameAsResident([(sw, pause) => expect(sw.controller.disable(pause.session_id)).toBe(1)]);
    expect(result).toMatchObject({ status: 'completed' });
    const cancelled = await expectSameAsResident([(sw, pause) => expect(sw.sessions.get(pause.conv_id)?.cancel()).toBe(true)]);
    expect(cancelled.result).toMatchObject({ status: 'cancelled' });
  });
});
