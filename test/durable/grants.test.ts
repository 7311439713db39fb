import { get, post, request } from '../helpers/server-harness.js';
import { startCli } from '../helpers/server-cli.js';
import { chatStepping, nextApproval, writeGrantFiles } from '../helpers/grant-files.js';
import { useDurableServers } from './helpers.js';

/** docs/protocol.md, Grants: through the real CLI on a real SQLite file, across a restart. */
describe('grants across a restart (sqlite)', () => {
  const { dir: d } = useDurableServers();
  const started: { stop: (signal?: NodeJS.Signals) => Promise<unknown> }[] = [];
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop('SIGKILL');
  });
  const serve = async (files: { tools: string; script: string }) => {
    const server = await startCli(['--port', '0', '--debug', '--data-dir', d().dataDir, '--script', files.script, '--tools', files.tools]);
    started.push(server);
    return server;
  };

  it('should keep a grant across kill -9, honour it, let a grantable: false tool ask, and stop at revocation', async () => {
    const files = writeGrantFiles(d().dir);
    const first = await serve(files);
    const ws = await chatStepping(first.base, first.wsBase, 'g1');
    const pause = await nextApproval(first.base, ws);
    const remembered = await post(first.base, '/debug/continue', { pause_id: pause.pause_id, remember: { scope: 'server', tools: ['echo'], ttl_ms: 3_600_000 } });
    expect(remembered.status).toBe(200);
    const { grant } = remembered.body;
    expect(grant).toMatchObject({ scope: 'server', tools: ['echo'], by: 'local', expires_at: grant.created_at + 3_600_000 });
    // guarded always asks, and cannot be remembered.
    const guarded = await nextApproval(first.base, ws);
    expect(guarded.extra.pending_tools).toEqual(['guarded']);
    const refused = await post(first.base, '/debug/continue', { pause_id: guarded.pause_id, remember: { scope: 'server', tools: ['guarded'] } });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    await ws.close();
    await first.stop('SIGKILL');

    const second = await serve(files);
    expect((await get(second.base, '/grants')).body).toEqual({ grants: [grant] });
    const again = await chatStepping(second.base, second.wsBase, 'g2');
    expect(await again.next('debugger.granted')).toMatchObject({ grant_id: grant.grant_id, tool_call_id: 'call_e', name: 'echo' });
    const asks = await nextApproval(second.base, again);
    expect(asks.extra.pending_tools).toEqual(['guarded']);
    expect((await post(second.base, '/debug/continue', { pause_id: asks.pause_id })).status).toBe(200);
    expect((await post(second.base, '/debug/step/disable', { conv_id: 'g2' })).status).toBe(200);
    expect(await again.next('run.end')).toMatchObject({ status: 'completed' });
    const decisions = (await get(second.base, '/conversations/g2/decisions')).body.decisions;
    expect(decisions[0]).toMatchObject({ by: 'grant', grant_id: grant.grant_id, reason: 'granted', tool_call_ids: ['call_e'], args_digests: { call_e: expect.stringMatching(/^[0-9a-f]{64}$/) } });

    expect((await request(second.base, 'DELETE', `/grants/${grant.grant_id}`)).status).toBe(200);
    const revoked = await chatStepping(second.base, second.wsBase, 'g3');
    expect((await nextApproval(second.base, revoked)).extra.pending_tools).toEqual(['echo']);
    await Promise.all([again.close(), revoked.close()]);
  }, 60_000);
});
