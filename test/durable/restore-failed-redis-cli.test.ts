import { Redis } from 'ioredis';
import { checkpointField, createRedisKeys } from '../../src/store/redis/keys.js';
import { get, post } from '../helpers/server-harness.js';
import type { CliServer } from '../helpers/server-cli.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { SemClient, type Frame } from '../helpers/server-ws-client.js';
import { conversation, runToPause, until, useDurableServers } from './helpers.js';

const errorLogs = (frames: readonly Frame[]): Frame[] => frames.filter((frame) => frame.type === 'log' && frame.level === 'error');

/** Every frame of the conversation from the first, once `done` holds of them. */
async function replay(server: CliServer, conv: string, done: (frames: readonly Frame[]) => boolean): Promise<Frame[]> {
  const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${conv}&since_seq=0`);
  try {
    await ws.waitFor(() => done(ws.sequenced), 0, 15_000);
    await ws.ping();
    return ws.sequenced;
  } finally {
    await ws.close();
  }
}

/** Each case on an empty Redis: the service's keys of the case before would be taken over too. */
async function flushRedis(url: string): Promise<void> {
  const client = new Redis(url);
  try {
    await client.flushall();
  } finally {
    client.disconnect();
  }
}

/**
 * Recovery is per run on `--store redis` too, through the real CLI on a real redis-server (docs/protocol.md,
 * Durability and Several instances): one run's checkpoint spoiled while its instance is dead, and the
 * instance that takes the runs over (at its start, or once the dead one's lease lapsed) ends that run
 * `failed` with a `log` frame and goes on with the others.
 */
describe('serve --store redis: a run that cannot be taken over after kill -9', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();

  it.each([
    // Started at once, the new instance mostly takes the run over (`service: the run …`); on a loaded
    // machine the dead one may have lapsed already by its start (`store: the run …`): both end it.
    { when: 'once the dead instance lapsed (a takeover)', downMs: 0, line: /(service|store): the run/ },
    { when: 'at the start (the dead instance lapsed already)', downMs: 1500, line: /store: the run/ },
  ])('should end only the spoiled run failed $when, take the others over paused, and not try it again', async ({ downMs, line }) => {
    const script = d().script('tool', 'slow');
    const flags = ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', '1000'];
    const convs = ['r1', 'r2', 'r3'];
    await flushRedis(redis().url);
    const first = await serve(d(), script, flags);
    const pauses = new Map<string, Frame>();
    for (const conv of convs) {
      const { ws, pause } = await runToPause(first.base, first.wsBase, conv);
      pauses.set(conv, pause);
      await ws.close();
    }
    expect(await first.stop('SIGKILL')).toBe(null);
    const bad = pauses.get('r2') as Frame;
    const client = new Redis(redis().url);
    try {
      const keys = createRedisKeys();
      const field = checkpointField('r2', bad.metadata.inference_id);
      expect(await client.hexists(keys.checkpoints, field)).toBe(1);
      await client.hset(keys.checkpoints, field, '{"conv_id": "r2", "next": ');
    } finally {
      client.disconnect();
    }

    // The dead instance's heartbeat lives a lease (1 s) after its kill: started within it, the new one takes
    // its runs over once it lapsed; started past it, the new one claims them all at its start.
    await new Promise((done) => setTimeout(done, downMs));
    const second = await serve(d(), script, flags);
    const said = `the run ${bad.metadata.inference_id} of r2 could not be`;
    await until(async () => second.stdout(), (out) => out.includes(said), 8000);
    expect(second.stdout()).toMatch(new RegExp(`${line.source} ${bad.metadata.inference_id} of r2 could not be`));
    expect(second.stdout()).toMatch(/cannot be read back: it does not parse/);
    const frames = await replay(second, 'r2', (seen) => seen.some((frame) => frame.type === 'run.end'));
    const [log] = errorLogs(frames);
    expect(log?.message).toMatch(new RegExp(`^run ${bad.metadata.inference_id} could not be restored from the store: the checkpoint of run \\S+ cannot be read back: it does not parse`));
    const after = frames.slice(frames.indexOf(log as Frame) + 1);
    expect(after.map((frame) => frame.type)).toEqual(['debugger.resume', 'run.end']);
    expect(after[0]).toMatchObject({ pause_id: bad.pause_id, reason: 'cancelled', by: 'system' });
    expect(after[1]).toMatchObject({ status: 'failed' });
    expect(await conversation(second.base, 'r2')).toMatchObject({ running: false, pending_pauses: [] });

    // The other runs are paused again with their pause ids, and go on to the end.
    for (const conv of ['r1', 'r3']) {
      const pause = pauses.get(conv) as Frame;
      const ws = await SemClient.connect(`${second.wsBase}/ws?conv_id=${conv}`);
      await until(async () => (await conversation(second.base, conv)).pending_pauses, (listed) => listed.length === 1, 8000);
      expect((await conversation(second.base, conv)).pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
      // Sent again while the run is being taken over here (503 pause_not_ready), as a client does.
      await until(async () => (await post(second.base, '/debug/continue', { pause_id: pause.pause_id })).status, (status) => status === 200, 8000);
      const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools', 0, 15_000);
      expect((await post(second.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
      expect(await ws.waitFor((frame) => frame.type === 'run.end', 0, 15_000)).toMatchObject({ status: 'completed' });
      await ws.close();
    }
    expect(d().runs()).toEqual(['slow', 'slow']);
    expect(await second.stop('SIGKILL')).toBe(null);

    // Stored as ended: the next instance neither resumes nor logs it again, and serves.
    const third = await serve(d(), script, flags);
    expect((await get(third.base, '/healthz')).status).toBe(200);
    // Past a whole lease, when a takeover of it would have happened.
    await new Promise((done) => setTimeout(done, 2500));
    expect(third.stdout()).not.toContain(said);
    expect(await conversation(third.base, 'r2')).toMatchObject({ running: false, pending_pauses: [] });
    expect(errorLogs(await replay(third, 'r2', (seen) => seen.some((frame) => frame.type === 'run.end')))).toEqual([log]);
  }, 90_000);
});
