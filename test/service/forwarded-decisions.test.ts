import { useRedisServer } from '../helpers/redis-server.js';
import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

/**
 * A decision posted to the instance that does not run the conversation is delivered to its owner, which answers it as
 * its own route would (docs/protocol.md, HTTP routes and Several instances): the same checks of caller, action and
 * arguments, the same error codes, and the decision recorded with the caller's name.
 */
describe('decisions forwarded to the owner', () => {
  const redis = useRedisServer();
  const { dir, serve } = useDurableServers();
  const tokens = { STEPWISE_AUTH_TOKENS: 'alice:token-a,bob:token-b' };

  it('should apply an edit and a continue from B as A would, and refuse what A would refuse with its codes', async () => {
    const d = dir();
    const script = d.script('tool', 'slow');
    const flags = ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS)];
    const [a, b] = await Promise.all([serve(d, script, flags, tokens), serve(d, script, flags, tokens)]);
    const ws = await SemClient.connect(`${a.wsBase}/ws?conv_id=fd1&access_token=token-a`);
    expect((await post(a.base, '/chat', { prompt: 'go', conv_id: 'fd1', overrides: { step_mode: true } }, 'token-a')).status).toBe(200);
    const pause = await ws.next('debugger.pause');

    const refused = async (body: unknown, token: string | undefined): Promise<[number, string]> => {
      const reply = await post(b.base, '/debug/continue', body, token);
      return [reply.status, reply.body.error?.code];
    };
    expect(await refused({ pause_id: pause.pause_id }, undefined)).toEqual([401, 'unauthorized']);
    expect(await refused({ pause_id: pause.pause_id }, 'token-b')).toEqual([403, 'forbidden']);
    expect(await refused({ pause_id: pause.pause_id, conv_id: 'elsewhere' }, 'token-a')).toEqual([403, 'forbidden']);
    expect(await refused({ pause_id: pause.pause_id, action: 'explode' }, 'token-a')).toEqual([400, 'invalid_action']);
    expect(await refused({ pause_id: pause.pause_id, action: 'edit', edits: { call_1: { n: 'five' } } }, 'token-a')).toEqual([400, 'invalid_arguments']);
    // None of those resolved it: the pause is still pending, on either instance.
    expect((await get(b.base, '/debug/pauses', 'token-a')).body.pauses.map((p: { pause_id: string }) => p.pause_id)).toEqual([pause.pause_id]);

    const edited = await post(b.base, '/debug/continue', { pause_id: pause.pause_id, action: 'edit', edits: { call_1: { n: 5 } } }, 'token-a');
    expect(edited.status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'debugger.resume' && frame.pause_id === pause.pause_id)).toMatchObject({ reason: 'edited', by: 'alice' });
    expect(await ws.waitFor((frame) => frame.type === 'tool.result')).toMatchObject({ result: { ok: true, n: 5 } });

    const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id }, 'token-a')).status).toBe(200);
    expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });

    const decisions = (await get(b.base, '/conversations/fd1/decisions', 'token-a')).body.decisions;
    expect(decisions).toEqual([
      expect.objectContaining({ pause_id: pause.pause_id, reason: 'edited', by: 'alice', edits: { call_1: { before: { n: 1 }, after: { n: 5 } } } }),
      expect.objectContaining({ pause_id: afterTools.pause_id, reason: 'continued', by: 'alice' }),
    ]);
    await ws.close();
  }, 60_000);
});
