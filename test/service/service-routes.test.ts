import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { get, post } from '../helpers/server-harness.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { runToPause, until, useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

/**
 * The read routes and `/chat/:profile` answer on any instance for any conversation (docs/protocol.md, Several
 * instances).
 */
describe('every route on any instance', () => {
  const redis = useRedisServer();
  const { dir: d, serve } = useDurableServers();
  const twoInstances = async () => {
    const profiles = join(d().dir, 'profiles.json');
    writeFileSync(
      profiles,
      JSON.stringify({
        profiles: {
          helper: { description: 'Calls the slow tool.', tools: ['slow'], allow_overrides: ['step_mode'] },
          other: { description: 'Another one.', tools: ['slow'] },
        },
      }),
    );
    const script = d().script('tool', 'slow');
    const flags = ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS), '--profiles', profiles];
    const [a, b] = await Promise.all([serve(d(), script, flags), serve(d(), script, flags)]);
    return { a, b };
  };
  const consecutive = (to: number): number[] => Array.from({ length: to }, (_, i) => i + 1);

  it('should list, show, hydrate and audit on B the conversations A ran and runs', async () => {
    const { a, b } = await twoInstances();
    const done = await SemClient.connect(`${a.wsBase}/ws?conv_id=sr1`);
    expect((await post(a.base, '/chat', { prompt: 'go', conv_id: 'sr1' })).status).toBe(200);
    await done.waitFor((frame) => frame.type === 'run.end');
    const { ws: paused, pause } = await runToPause(a.base, a.wsBase, 'sr2');

    const listed = (await get(b.base, '/conversations')).body.conversations;
    expect(listed).toEqual([
      expect.objectContaining({ conv_id: 'sr1', session_id: done.hello.session_id, running: false, step_mode: false, profile: null }),
      expect.objectContaining({ conv_id: 'sr2', session_id: paused.hello.session_id, running: true, step_mode: true }),
    ]);
    expect((await get(a.base, '/conversations')).body.conversations).toEqual(listed);

    // The paused run as its owner shows it, and as B shows it from the store.
    const onA = await get(a.base, '/conversations/sr2');
    const onB = await get(b.base, '/conversations/sr2');
    expect(onB.status).toBe(200);
    expect(onB.body).toEqual(onA.body);
    expect(onB.body.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id })]);
    expect((await get(b.base, '/conversations/sr1')).body).toEqual((await get(a.base, '/conversations/sr1')).body);
    expect((await get(b.base, '/conversations/nope')).status).toBe(404);

    const hydrated = await get(b.base, '/hydrate?conv_id=sr1');
    expect(hydrated.status).toBe(200);
    expect(hydrated.body).toEqual((await get(a.base, '/hydrate?conv_id=sr1')).body);
    expect(hydrated.body.frames.map((frame: { event: { seq: number } }) => frame.event.seq)).toEqual(consecutive(hydrated.body.last_seq));

    expect((await post(b.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    const decisions = await until(() => get(b.base, '/conversations/sr2/decisions'), (reply) => reply.body.decisions?.length === 1);
    expect(decisions.body.decisions).toEqual([expect.objectContaining({ pause_id: pause.pause_id, reason: 'continued', by: 'local' })]);
    await Promise.all([done.close(), paused.close()]);
  }, 60_000);

  it('should refuse /chat/:profile on B while A runs the conversation, and run it on B after', async () => {
    const { a, b } = await twoInstances();
    const ws = await SemClient.connect(`${a.wsBase}/ws?conv_id=sp1`);
    expect((await post(a.base, '/chat/helper', { prompt: 'go', conv_id: 'sp1', overrides: { step_mode: true } })).status).toBe(200);
    await ws.next('debugger.pause');

    const busy = await post(b.base, '/chat/helper', { prompt: 'again', conv_id: 'sp1' });
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ conv_id: 'sp1', error: { code: 'run_in_progress' } });

    expect((await post(b.base, '/debug/step/disable', { conv_id: 'sp1' })).status).toBe(200);
    await ws.waitFor((frame) => frame.type === 'run.end');
    // Once A's run ended, its lease is released at its next renewal tick.
    const other = await until(() => post(b.base, '/chat/other', { prompt: 'x', conv_id: 'sp1' }), (reply) => reply.body.error?.code !== 'run_in_progress', 5000);
    expect(other.body.error.code).toBe('profile_mismatch');
    const next = await until(() => post(b.base, '/chat/helper', { prompt: 'more', conv_id: 'sp1' }), (reply) => reply.status === 200, 5000);
    expect(next.body.session_id).toBe(ws.hello.session_id);
    const end = await ws.waitFor((frame) => frame.type === 'run.end' && frame.inference_id === next.body.inference_id);
    expect(ws.sequenced.map((frame) => frame.seq)).toEqual(consecutive(end.seq as number));
    await ws.close();
  }, 60_000);
});
