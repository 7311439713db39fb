import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { filter, firstValueFrom } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createScriptedEngine, createStepwise, defineTool, type Stepwise } from '../../src/index.js';
import { checkpointField, createRedisKeys, type RedisKeys } from '../../src/store/redis/keys.js';
import { createRedisStore } from '../../src/store/redis/redis-store.js';
import type { PauseInfo, SequencedEvent, StepwiseEvent } from '../../src/streams/events.js';
import { until } from '../durable/helpers.js';
import { useRedisServer } from '../helpers/redis-server.js';

const redis = useRedisServer();
const echo = defineTool({ name: 'echo', description: 'echo', parameters: z.object({ text: z.string() }), execute: ({ text }) => ({ text }) });
const RUN = [{ tool_calls: [{ name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }];

/** A runtime on this test's key prefix of the Redis store (one process: not joined to a service). */
const runtime = (keyPrefix: string): Stepwise =>
  createStepwise({
    engine: createScriptedEngine({ responses: [...RUN, ...RUN] }),
    tools: [echo],
    pauseTimeoutMs: 3_600_000,
    store: createRedisStore({ url: redis().url, keyPrefix }),
  });

const close = async (sw: Stepwise): Promise<void> => {
  sw.dispose();
  await sw.store.close();
};

/** Each conversation's run paused at `after_inference` in step mode (after a finished run, for `finishedFirst`), then suspended. */
async function pausedThenStopped(keyPrefix: string, convs: readonly string[], finishedFirst: readonly string[] = []): Promise<Map<string, PauseInfo>> {
  const first = runtime(keyPrefix);
  for (const conv_id of finishedFirst) await first.sessions.open({ conv_id }).start({ prompt: 'first' }).result();
  for (const conv_id of convs) {
    const session = first.sessions.open({ conv_id });
    first.controller.enable(session.session_id);
    session.start({ prompt: 'go' });
  }
  // Each run pauses once its writes are committed to Redis.
  await until(async () => first.controller.pending().length, (count) => count === convs.length);
  await first.store.flush();
  const pauses = new Map(first.controller.pending().map((pause) => [pause.conv_id, pause]));
  expect([...pauses.keys()].sort()).toEqual([...convs].sort());
  await first.suspend();
  await first.store.close();
  return pauses;
}

function recovering(keyPrefix: string): { sw: Stepwise; events: SequencedEvent[] } {
  const sw = runtime(keyPrefix);
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

/** `{"a":{"a":…1…}}` nested `depth` objects deep. */
const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

/**
 * Recovery is per run on the Redis store too (docs/protocol.md, Durability): its own reads parse every
 * record, pause, checkpoint and turn, and one that cannot be read back ends its run `failed`, never the start.
 */
describe('a run that cannot be restored from a Redis store', () => {
  const client = (): Redis => (clientOf ??= new Redis(redis().url));
  let clientOf: Redis | undefined;
  afterAll(() => clientOf?.disconnect());

  it.each([
    { what: 'a checkpoint that does not parse', spoil: (keys: RedisKeys, pause: PauseInfo) => client().hset(keys.checkpoints, checkpointField('c1', pause.inference_id), '{"conv_id":'), error: /^the checkpoint of run \S+ cannot be read back: it does not parse/ },
    {
      what: 'a checkpoint of the wrong shape',
      spoil: (keys: RedisKeys, pause: PauseInfo) => client().hset(keys.checkpoints, checkpointField('c1', pause.inference_id), JSON.stringify({ conv_id: 'c1', inference_id: pause.inference_id })),
      error: /its session_id or turn_id is not a string/,
    },
    { what: 'a pause that does not parse', spoil: (keys: RedisKeys, pause: PauseInfo) => client().hset(keys.pauses, pause.pause_id, 'pause?'), error: /^the pause \S+ cannot be read back: it does not parse/ },
    {
      what: 'a tool call nested 5000 levels deep',
      spoil: async (keys: RedisKeys, pause: PauseInfo) => {
        const field = checkpointField('c1', pause.inference_id);
        const json = (await client().hget(keys.checkpoints, field)) as string;
        const deep = json.replace(/"args":\{"text":"x"\}/, `"args":${nested(5000)}`);
        expect(deep).not.toBe(json);
        await client().hset(keys.checkpoints, field, deep);
      },
      error: /it is nested deeper than 144 levels/,
    },
  ])('should end only the run with $what failed, and bring the others back paused', async ({ spoil, error }) => {
    const keyPrefix = `unrestored-${randomUUID()}:`;
    const pauses = await pausedThenStopped(keyPrefix, ['c0', 'c1', 'c2']);
    const bad = pauses.get('c1') as PauseInfo;
    const keys = createRedisKeys(keyPrefix);
    await spoil(keys, bad);
    // A field that names no run at all is passed over.
    await client().hset(keys.checkpoints, 'not a field', '{}');

    const { sw, events } = recovering(keyPrefix);
    try {
      const report = await sw.recover();
      expect(report).toEqual({ conversations: 3, runs: 2, pauses: 2, failed: [{ conv_id: 'c1', inference_id: bad.inference_id, error: expect.stringMatching(error) }] });
      expect(sw.controller.pending().map((pause) => pause.pause_id).sort()).toEqual([pauses.get('c0')?.pause_id, pauses.get('c2')?.pause_id].sort());
      const own = eventsOf(events, 'c1');
      expect(own.map((event) => event.type)).toEqual(['log', 'resumed', 'run-ended']);
      expect(own[0]).toMatchObject({ level: 'error', message: `run ${bad.inference_id} could not be restored from the store: ${report.failed?.[0]?.error}` });
      expect(own[1]).toMatchObject({ pause_id: bad.pause_id, reason: 'cancelled', by: 'system' });
      expect(own[2]).toMatchObject({ status: 'failed' });
      await sw.store.flush();
      expect(await client().hexists(keys.checkpoints, checkpointField('c1', bad.inference_id))).toBe(0);
      expect(await client().hexists(keys.pauses, bad.pause_id)).toBe(0);
      expect((await sw.store.decisions('c1')).map((decision) => [decision.pause_id, decision.reason, decision.by])).toEqual([[bad.pause_id, 'cancelled', 'system']]);
      for (const convId of ['c0', 'c2']) expect(await finish(sw, convId)).toMatchObject({ status: 'completed' });
    } finally {
      await close(sw);
    }

    const { sw: third, events: later } = recovering(keyPrefix);
    try {
      expect(await third.recover()).toEqual({ conversations: 3, runs: 0, pauses: 0 });
      expect(later).toEqual([]);
    } finally {
      await close(third);
    }
  }, 20_000);

  it('should end failed, when it wakes, a run restored asleep whose finished turn cannot be read back', async () => {
    const keyPrefix = `unrestored-${randomUUID()}:`;
    const pauses = await pausedThenStopped(keyPrefix, ['c0', 'c1'], ['c1']);
    const bad = pauses.get('c1') as PauseInfo;
    const keys = createRedisKeys(keyPrefix);
    const [firstTurn] = await client().lrange(keys.conversation('c1').turnOrder, 0, 0);
    await client().hset(keys.conversation('c1').turns, firstTurn as string, '[{"id":');

    const { sw, events } = recovering(keyPrefix);
    try {
      // Restored asleep: its history is read only when it wakes.
      expect(await sw.recover()).toEqual({ conversations: 2, runs: 2, pauses: 2 });
      const ended = firstValueFrom(sw.hub.events$.pipe(filter(({ event }) => event.type === 'run-ended' && event.conv_id === 'c1')));
      expect(sw.controller.submit({ pause_id: bad.pause_id }).ok).toBe(true);
      expect((await ended).event).toMatchObject({ status: 'failed', error: expect.stringMatching(new RegExp(`the blocks of turn ${firstTurn} cannot be read back`)) });
      expect(eventsOf(events, 'c1').map((event) => event.type)).toEqual(['log', 'paused', 'resumed', 'log', 'run-ended']);
      await sw.store.flush();
      expect(await sw.store.checkpoints('c1')).toEqual([]);
      expect(await finish(sw, 'c0')).toMatchObject({ status: 'completed' });
    } finally {
      await close(sw);
    }
  }, 20_000);
});
