import { useRedisServer } from '../helpers/redis-server.js';
import { get, post, request } from '../helpers/server-harness.js';
import { startCli, type CliServer } from '../helpers/server-cli.js';
import { chatStepping, nextApproval, writeGrantFiles } from '../helpers/grant-files.js';
import { useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

/** docs/protocol.md, Grants and Several instances: one grant for the whole service, whichever instance made it. */
describe('grants on a Redis service', () => {
  const redis = useRedisServer();
  const { dir: d } = useDurableServers();
  const started: CliServer[] = [];
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop('SIGKILL');
  });

  it('should honour a grant made on A for a run on B, and stop on A once B revoked it', async () => {
    const files = writeGrantFiles(d().dir);
    const tokens = { STEPWISE_AUTH_TOKENS: 'alice:token-a,bob:token-b' };
    const flags = ['--port', '0', '--debug', '--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS), '--script', files.script, '--tools', files.tools];
    const [a, b] = await Promise.all([startCli(flags, tokens), startCli(flags, tokens)]);
    started.push(a, b);

    const onA = await chatStepping(a.base, a.wsBase, 'r1', 'token-a');
    const pause = await nextApproval(a.base, onA, 'token-a');
    const { grant } = (await post(a.base, '/debug/continue', { pause_id: pause.pause_id, remember: { scope: 'server', tools: ['echo'] } }, 'token-a')).body;
    expect(grant).toMatchObject({ scope: 'server', tools: ['echo'], by: 'alice' });
    expect((await get(b.base, '/grants', 'token-a')).body).toEqual({ grants: [grant] });
    expect((await get(b.base, '/grants', 'token-b')).body).toEqual({ grants: [] });

    // A conversation started on B runs on B: its echo call runs under the grant A made.
    const onB = await chatStepping(b.base, b.wsBase, 'r2', 'token-a');
    expect(await onB.next('debugger.granted')).toMatchObject({ grant_id: grant.grant_id, tool_call_id: 'call_e', name: 'echo' });
    expect((await nextApproval(b.base, onB, 'token-a')).extra.pending_tools).toEqual(['guarded']);
    const decisions = (await get(a.base, '/conversations/r2/decisions', 'token-a')).body.decisions;
    expect(decisions[0]).toMatchObject({ by: 'grant', grant_id: grant.grant_id, tool_call_ids: ['call_e'] });
    // Bob's conversations are outside alice's grant.
    const bobs = await chatStepping(b.base, b.wsBase, 'r3', 'token-b');
    expect((await nextApproval(b.base, bobs, 'token-b')).extra.pending_tools).toEqual(['echo']);

    expect((await request(b.base, 'DELETE', `/grants/${grant.grant_id}`, undefined, 'token-b')).status).toBe(403);
    expect((await request(b.base, 'DELETE', `/grants/${grant.grant_id}`, undefined, 'token-a')).status).toBe(200);
    const revoked = await chatStepping(a.base, a.wsBase, 'r4', 'token-a');
    expect((await nextApproval(a.base, revoked, 'token-a')).extra.pending_tools).toEqual(['echo']);
    await Promise.all([onA.close(), onB.close(), bobs.close(), revoked.close()]);
  }, 60_000);
});
