import { join } from 'node:path';
import Database from 'better-sqlite3';
import { filter, firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createScriptedEngine, createStepwise, defineTool, type Engine, type Stepwise } from '../../src/index.js';
import type { Store } from '../../src/core/store.js';
import { StoredRowError } from '../../src/core/store-errors.js';
import { createSqliteStore, STORE_FILE } from '../../src/store/sqlite/sqlite-store.js';
import type { PauseInfo, SequencedEvent, StepwiseEvent } from '../../src/streams/events.js';
import { useTempDir } from './fixtures.js';

const echo = defineTool({ name: 'echo', description: 'echo', parameters: z.object({ text: z.string() }), execute: ({ text }) => ({ text }) });

/**
 * Like ./paused-runtime.ts, with the options these tests vary: each run asks for one `echo` call,
 * then answers "done"; pauses wait an hour. `store` wraps the SQLite store (a fault at wake).
 */
function runtime(dataDir: string, options: { hibernateAfterMs?: number; store?: (store: Store) => Store; engine?: (engine: Engine) => Engine } = {}): Stepwise {
  const store = createSqliteStore({ dataDir });
  const run = [{ tool_calls: [{ name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }];
  // Two runs' worth per conversation: one test runs a conversation twice.
  const engine = createScriptedEngine({ responses: [...run, ...run] });
  return createStepwise({
    engine: options.engine ? options.engine(engine) : engine,
    tools: [echo],
    pauseTimeoutMs: 3_600_000,
    ...(options.hibernateAfterMs === undefined ? {} : { hibernateAfterMs: options.hibernateAfterMs }),
    store: options.store ? options.store(store) : store,
  });
}

const CONVS = ['c0', 'c1', 'c2'];

/** Each conversation's run paused at `after_inference` in step mode, then suspended as SIGTERM does: their pauses. */
async function pausedThenStopped(dataDir: string, convs: readonly string[] = CONVS): Promise<Map<string, PauseInfo>> {
  const first = runtime(dataDir);
  for (const conv_id of convs) {
    const session = first.sessions.open({ conv_id });
    first.controller.enable(session.session_id);
    session.start({ prompt: 'go' });
  }
  const pauses = new Map(first.controller.pending().map((pause) => [pause.conv_id, pause]));
  expect([...pauses.keys()].sort()).toEqual([...convs].sort());
  await first.suspend();
  await first.store.close();
  return pauses;
}

/** What a hand, a bug or a torn write did to the file while no process had it open. */
function corrupt(dataDir: string, sql: string, ...params: unknown[]): void {
  const db = new Database(join(dataDir, STORE_FILE));
  try {
    expect(db.prepare(sql).run(...params).changes).toBeGreaterThan(0);
  } finally {
    db.close();
  }
}

/** A runtime recovering `dataDir`, and every event it publishes from the start. */
function recovering(dataDir: string, options?: Parameters<typeof runtime>[1]): { sw: Stepwise; events: SequencedEvent[] } {
  const sw = runtime(dataDir, options);
  const events: SequencedEvent[] = [];
  sw.hub.events$.subscribe((frame) => events.push(frame));
  return { sw, events };
}

const eventsOf = (events: readonly SequencedEvent[], convId: string): StepwiseEvent[] => events.map(({ event }) => event).filter((event) => event.conv_id === convId);

/** Continues every pause of the conversation's run until it ends: its `run-ended`. */
async function finish(sw: Stepwise, convId: string): Promise<StepwiseEvent> {
  const ended = firstValueFrom(sw.hub.events$.pipe(filter(({ event }) => event.type === 'run-ended' && event.conv_id === convId)));
  const resolving = sw.hub.events$.pipe(filter(({ event }) => event.type === 'paused' && event.conv_id === convId)).subscribe(({ event }) => {
    if (event.type === 'paused') setImmediate(() => sw.controller.submit({ pause_id: event.pause.pause_id }));
  });
  for (const pause of sw.controller.pending().filter((pending) => pending.conv_id === convId)) expect(sw.controller.submit({ pause_id: pause.pause_id }).ok).toBe(true);
  try {
    return (await ended).event;
  } finally {
    resolving.unsubscribe();
  }
}

const close = async (sw: Stepwise): Promise<void> => {
  sw.dispose();
  await sw.store.close();
};

/** `{"a":{"a":…1…}}` nested `depth` objects deep. */
const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

/**
 * Recovery is per run (docs/protocol.md, Durability): one run's rows that cannot be read back end that
 * run `failed`, with a `log` frame and its end stored, and every other run comes back as it was.
 * Real SQLite files, corrupted between a first runtime (suspended) and a second (recovering).
 */
describe('a run that cannot be restored from a SQLite store', () => {
  const dirOf = useTempDir();

  it.each([
    { what: 'a checkpoint that does not parse', sql: `UPDATE checkpoints SET checkpoint = '{"conv_id": "c1", ' WHERE conv_id = ?`, error: /^the checkpoint of run \S+ cannot be read back: it does not parse/ },
    { what: 'a checkpoint of the wrong shape', sql: `UPDATE checkpoints SET checkpoint = json_set(checkpoint, '$.next', 'nowhere') WHERE conv_id = ?`, error: /its next phase "nowhere" is not a phase/ },
    { what: 'a checkpoint that is not an object', sql: `UPDATE checkpoints SET checkpoint = '[1, 2]' WHERE conv_id = ?`, error: /it is not an object/ },
    // Its end deletes it by the ids it says: one that said others would be restored again at every start.
    { what: "a checkpoint that names another run than its row's", sql: `UPDATE checkpoints SET checkpoint = json_set(checkpoint, '$.inference_id', 'inf_other') WHERE conv_id = ?`, error: /its ids are not the ones it is stored under/ },
    { what: 'a pause row that does not parse', sql: `UPDATE pauses SET pause = 'pause?' WHERE conv_id = ?`, error: /^the pause \S+ cannot be read back: it does not parse/ },
    {
      what: 'a tool call nested 5000 levels deep',
      sql: `UPDATE checkpoints SET blocks = '[{"id":"b1","kind":"user","role":"user","payload":{"text":"go"}},{"id":"b2","kind":"tool_call","role":"assistant","payload":{"id":"call_1","name":"echo","args":${nested(5000)}}}]' WHERE conv_id = ?`,
      error: /cannot be read back: it is nested deeper than 144 levels/,
    },
  ])('should end only the run with $what failed, with a log frame, and bring every other run back paused', async ({ sql, error }) => {
    const dataDir = dirOf();
    const pauses = await pausedThenStopped(dataDir);
    const bad = pauses.get('c1') as PauseInfo;
    corrupt(dataDir, sql, 'c1');

    const { sw, events } = recovering(dataDir);
    try {
      const report = await sw.recover();
      expect(report).toEqual({ conversations: 3, runs: 2, pauses: 2, failed: [{ conv_id: 'c1', inference_id: bad.inference_id, error: expect.stringMatching(error) }] });
      expect(sw.controller.pending().map((pause) => pause.pause_id).sort()).toEqual([pauses.get('c0')?.pause_id, pauses.get('c2')?.pause_id].sort());
      // Its log frame names the run and why, its stored pause resolves as a cancelled run's does, then it ends failed.
      const own = eventsOf(events, 'c1');
      expect(own.map((event) => event.type)).toEqual(['log', 'resumed', 'run-ended']);
      const why = report.failed?.[0]?.error;
      expect(own[0]).toMatchObject({ level: 'error', message: `run ${bad.inference_id} could not be restored from the store: ${why}` });
      expect(own[1]).toMatchObject({ pause_id: bad.pause_id, reason: 'cancelled', by: 'system' });
      expect(own[2]).toMatchObject({ inference_id: bad.inference_id, status: 'failed', error: `the run could not be restored from the store: ${why}` });
      const session = sw.sessions.get('c1');
      expect(session?.running).toBe(false);
      // Its end is stored: no checkpoint, no pending pause, the cancel in the audit trail, a readable turn.
      expect(await sw.store.checkpoints('c1')).toEqual([]);
      expect(await sw.store.pauses('c1')).toEqual([]);
      expect((await sw.store.decisions('c1')).map((decision) => [decision.pause_id, decision.reason, decision.by])).toEqual([[bad.pause_id, 'cancelled', 'system']]);
      expect((await sw.store.turns('c1')).map((turn) => turn.blocks)).toEqual(session?.turns().map((turn) => turn.blocks));

      // The others go on as if nothing had happened.
      for (const convId of ['c0', 'c2']) expect(await finish(sw, convId)).toMatchObject({ type: 'run-ended', status: 'completed' });
    } finally {
      await close(sw);
    }

    // The next start does not try it again.
    const { sw: third, events: later } = recovering(dataDir);
    try {
      expect(await third.recover()).toEqual({ conversations: 3, runs: 0, pauses: 0 });
      expect(later).toEqual([]);
      expect(third.sessions.get('c1')?.running).toBe(false);
    } finally {
      await close(third);
    }
  });

  it.each([
    { what: 'does not parse', sql: `UPDATE conversations SET record = 'record?' WHERE conv_id = ?`, error: /^the record of conversation c1 cannot be read back: it does not parse/ },
    // Its rows are found by the id it is stored under: one that said another would be restored with another's rows.
    {
      what: 'names another conversation than its row',
      sql: `UPDATE conversations SET record = json_set(record, '$.conv_id', 'c_other') WHERE conv_id = ?`,
      error: /^the record of conversation c1 cannot be read back: its conv_id is not the one it is stored under/,
    },
  ])('should end a run whose conversation record $what, storing its end alone', async ({ sql, error }) => {
    const dataDir = dirOf();
    const pauses = await pausedThenStopped(dataDir);
    corrupt(dataDir, sql, 'c1');

    const { sw, events } = recovering(dataDir);
    try {
      const report = await sw.recover();
      expect(report).toEqual({
        conversations: 2,
        runs: 2,
        pauses: 2,
        failed: [{ conv_id: 'c1', inference_id: pauses.get('c1')?.inference_id, error: expect.stringMatching(error) }],
      });
      expect(sw.sessions.get('c1')).toBeUndefined();
      expect(eventsOf(events, 'c1')).toEqual([]);
      // No checkpoint, and its pause no longer pending: the cancel in the audit trail.
      expect(await sw.store.checkpoints('c1')).toEqual([]);
      expect(await sw.store.pauses('c1')).toEqual([]);
      expect((await sw.store.decisions('c1')).map((decision) => [decision.pause_id, decision.reason, decision.by])).toEqual([[pauses.get('c1')?.pause_id, 'cancelled', 'system']]);
      expect(await finish(sw, 'c0')).toMatchObject({ status: 'completed' });
    } finally {
      await close(sw);
    }
  });

  it('should end failed a run whose resumption throws (its engine refuses its stored state), and resume the others', async () => {
    const dataDir = dirOf();
    const pauses = await pausedThenStopped(dataDir);
    const refusing = (engine: Engine): Engine => ({
      ...engine,
      restore: (convId, state) => {
        if (convId === 'c1') throw new Error('the engine cannot take this state');
        engine.restore?.(convId, state);
      },
    });
    const { sw, events } = recovering(dataDir, { engine: refusing });
    try {
      const report = await sw.recover();
      expect(report).toEqual({ conversations: 3, runs: 2, pauses: 2, failed: [{ conv_id: 'c1', inference_id: pauses.get('c1')?.inference_id, error: 'the engine cannot take this state' }] });
      expect(eventsOf(events, 'c1').map((event) => event.type)).toEqual(['log', 'resumed', 'run-ended']);
      expect(await sw.store.checkpoints('c1')).toEqual([]);
      for (const convId of ['c0', 'c2']) expect(await finish(sw, convId)).toMatchObject({ status: 'completed' });
    } finally {
      await close(sw);
    }
    const { sw: third } = recovering(dataDir, { engine: refusing });
    try {
      // Its conversation has no run left to resume; the engine refuses it again, and nothing else happens.
      expect(await third.recover()).toEqual({ conversations: 3, runs: 0, pauses: 0 });
    } finally {
      await close(third);
    }
  });

  it('should end failed at restart a parked run whose finished turn cannot be read back (its history is built then)', async () => {
    const dataDir = dirOf();
    const first = runtime(dataDir);
    const done = first.sessions.open({ conv_id: 'c1' });
    await done.start({ prompt: 'first' }).result();
    const firstTurn = done.turns()[0]?.id as string;
    await pausedThenStoppedWith(first, ['c0', 'c1']);
    corrupt(dataDir, `UPDATE turns SET blocks = '[{"id":' WHERE conv_id = ? AND turn_id = ?`, 'c1', firstTurn);

    // Without hibernation a paused run is parked: its state, history included, is built at the start.
    const { sw, events } = recovering(dataDir, { hibernateAfterMs: Infinity });
    try {
      const report = await sw.recover();
      expect(report).toMatchObject({ conversations: 2, runs: 1, pauses: 1, failed: [{ conv_id: 'c1', error: expect.stringMatching(new RegExp(`^the blocks of turn ${firstTurn} cannot be read back`)) }] });
      expect(eventsOf(events, 'c1').map((event) => event.type)).toEqual(['log', 'resumed', 'run-ended']);
      expect(await sw.store.checkpoints('c1')).toEqual([]);
      expect(await finish(sw, 'c0')).toMatchObject({ status: 'completed' });
    } finally {
      await close(sw);
    }
  });

  it.each([
    { what: 'turn row that does not parse', sql: `UPDATE turns SET blocks = '[{"id":' WHERE conv_id = ?`, error: /: the blocks of turn \S+ cannot be read back: it does not parse/ },
    { what: 'turn row that is missing', sql: `DELETE FROM turns WHERE conv_id = ?`, error: /: the turn \S+ of run \S+ cannot be read back: it has no stored row/ },
  ])('should end failed, when it wakes, a run restored asleep whose $what', async ({ sql, error }) => {
    const dataDir = dirOf();
    const pauses = await pausedThenStopped(dataDir, ['c0', 'c1']);
    const bad = pauses.get('c1') as PauseInfo;
    // Its checkpoint shares its turn's blocks (no blocks of its own): read back from the turn when it wakes.
    corrupt(dataDir, `UPDATE checkpoints SET blocks = NULL WHERE conv_id = ?`, 'c1');
    corrupt(dataDir, sql, 'c1');

    const { sw, events } = recovering(dataDir);
    try {
      // Restored asleep, nothing of it parsed: it comes back paused.
      expect(await sw.recover()).toEqual({ conversations: 2, runs: 2, pauses: 2 });
      expect(sw.controller.pending().map((pause) => pause.pause_id).sort()).toEqual([pauses.get('c0')?.pause_id, bad.pause_id].sort());
      const ended = firstValueFrom(sw.hub.events$.pipe(filter(({ event }) => event.type === 'run-ended' && event.conv_id === 'c1')));
      expect(sw.controller.submit({ pause_id: bad.pause_id }).ok).toBe(true);
      expect((await ended).event).toMatchObject({ status: 'failed', error: expect.stringMatching(/^the run could not be restored from the store: /) });
      const own = eventsOf(events, 'c1');
      expect(own.map((event) => event.type)).toEqual(['log', 'paused', 'resumed', 'log', 'run-ended']);
      expect(own[3]).toMatchObject({ level: 'error', message: expect.stringMatching(new RegExp(`^run ${bad.inference_id} could not be restored from the store: `)) });
      expect((own[3] as { message: string }).message).toMatch(error);
      await sw.store.flush();
      expect(await sw.store.checkpoints('c1')).toEqual([]);
      // Stored again as a turn that can be read: the conversation goes on.
      expect(sw.sessions.get('c1')?.running).toBe(false);
      expect((await sw.store.turns('c1')).map((turn) => turn.blocks)).toEqual([[]]);
      expect(await finish(sw, 'c0')).toMatchObject({ status: 'completed' });
    } finally {
      await close(sw);
    }
    const { sw: third, events: later } = recovering(dataDir);
    try {
      expect(await third.recover()).toEqual({ conversations: 2, runs: 0, pauses: 0 });
      expect(later).toEqual([]);
    } finally {
      await close(third);
    }
  });

  it('should end failed, instead of throwing, a run hibernated here whose checkpoint cannot be read back when it wakes', async () => {
    const dataDir = dirOf();
    let broken = false;
    let hibernated: () => void = () => undefined;
    const asleep = new Promise<void>((done) => (hibernated = done));
    const sw = runtime(dataDir, {
      hibernateAfterMs: 20,
      store: (store) => ({
        ...store,
        // The checkpoint as a torn row reads back once the run has left memory.
        checkpointNow: (convId, inferenceId) => {
          if (broken) throw new StoredRowError(`the checkpoint of run ${inferenceId}`, 'it does not parse (torn)');
          return store.checkpointNow?.(convId, inferenceId);
        },
        forget: (convId) => {
          store.forget?.(convId);
          hibernated();
        },
      }),
    });
    const events: SequencedEvent[] = [];
    sw.hub.events$.subscribe((frame) => events.push(frame));
    try {
      const session = sw.sessions.open({ conv_id: 'c1' });
      sw.controller.enable(session.session_id);
      const handle = session.start({ prompt: 'go' });
      await asleep;
      broken = true;
      const [pause] = sw.controller.pending();
      expect(sw.controller.submit({ pause_id: pause?.pause_id as string }).ok).toBe(true);
      expect(await handle.result()).toMatchObject({ status: 'failed', error: 'the run could not be restored from the store: the checkpoint of run ' + pause?.inference_id + ' cannot be read back: it does not parse (torn)' });
      expect(eventsOf(events, 'c1').slice(-2)).toMatchObject([
        { type: 'log', level: 'error', message: `run ${pause?.inference_id} could not be restored from the store: the checkpoint of run ${pause?.inference_id} cannot be read back: it does not parse (torn)` },
        { type: 'run-ended', status: 'failed' },
      ]);
      expect(session.running).toBe(false);
      await sw.store.flush();
      expect(await sw.store.checkpoints('c1')).toEqual([]);
    } finally {
      await close(sw);
    }
  });
});

/** `pausedThenStopped` on a runtime already made (its other conversations kept as they are). */
async function pausedThenStoppedWith(first: Stepwise, convs: readonly string[]): Promise<void> {
  for (const conv_id of convs) {
    const session = first.sessions.open({ conv_id });
    first.controller.enable(session.session_id);
    session.start({ prompt: 'go' });
  }
  expect(first.controller.pending()).toHaveLength(convs.length);
  await first.suspend();
  await first.store.close();
}
