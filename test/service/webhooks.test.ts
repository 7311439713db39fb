import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLinkSigner } from '../../src/server/webhooks/signing.js';
import type { WebhooksConfig } from '../../src/server/webhooks/webhooks-config.js';
import { get, post } from '../helpers/server-harness.js';
import { startReceiver } from '../helpers/webhook-receiver.js';
import { useRedisServer } from '../helpers/redis-server.js';
import { runToPause, useDurableServers } from '../durable/helpers.js';
import { TEST_LEASE_MS } from './helpers.js';

const SECRET = 'service-webhook-secret-0123';
const LINK_SECRET = 'service-link-secret-0123456789';

/**
 * Webhooks and signed links through the real CLI on a service of two instances (docs/protocol.md,
 * Webhooks and signed links): the run's owner sends the signed POST once, its link answers the pause on
 * the other instance, and the tokens that must be refused are, changing nothing; receivers that fail
 * or hang are retried in the background while the run goes on.
 */
describe('webhooks and links across two instances', () => {
  const redis = useRedisServer();
  const { dir, serve } = useDurableServers();

  it('should resolve a pause through a link on the other instance and refuse forged, expired, reused and cross-pause tokens', async () => {
    const [good, failing, hanging] = await Promise.all([startReceiver(SECRET), startReceiver(SECRET, 'fail'), startReceiver(SECRET, 'hang')]);
    const config: WebhooksConfig = { webhooks: [good, failing, hanging].map((receiver) => ({ url: receiver.url, secret: SECRET })), link_secret: LINK_SECRET };
    const d = dir();
    const file = join(d.dir, 'webhooks.json');
    writeFileSync(file, JSON.stringify(config));
    const flags = ['--store', 'redis', '--redis-url', redis().url, '--lease-ms', String(TEST_LEASE_MS), '--webhooks', file];
    const script = d.script('tool', 'slow');
    const [a, b] = await Promise.all([serve(d, script, flags), serve(d, script, flags)]);
    try {
      const { ws, pause } = await runToPause(a.base, a.wsBase, 'hooked-svc');
      const event = await good.next((item) => item.body.pause?.pause_id === pause.pause_id);
      expect(event.verified).toBe(true);
      expect(event.body).toMatchObject({ type: 'pause', conv_id: 'hooked-svc', links: { continue: expect.stringContaining(`${a.base}/a/`) } });
      // The failing receiver is tried again meanwhile, and the hanging one holds its request: neither stops the run.
      await failing.next((item) => item.body.pause?.pause_id === pause.pause_id, 1);
      await hanging.next(() => true);

      const onB = (link: string): string => `${b.base}${new URL(link).pathname}`;
      const token = new URL(event.body.links.continue).pathname.slice(3);
      const page = await fetch(onB(event.body.links.continue), { headers: { accept: 'text/html' } });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain(pause.summary);

      const signer = createLinkSigner(LINK_SECRET);
      const refused = async (path: string, body: unknown = {}): Promise<[number, string]> => {
        const reply = await post(b.base, path, body);
        return [reply.status, reply.body.error?.code];
      };
      expect(await refused(`/a/${token.slice(0, -3)}xyz`)).toEqual([403, 'link_invalid']);
      expect(await refused(`/a/${signer.sign({ pause_id: pause.pause_id, conv_id: 'hooked-svc', action: 'continue', deadline_ms: Date.now() - 1000 })}`)).toEqual([403, 'link_expired']);
      // Cross-pause: this pause's token posted for another pause, or for the other action.
      expect(await refused(`/a/${token}`, { pause_id: 'pause_of_another_run' })).toEqual([403, 'link_mismatch']);
      expect(await refused(`/a/${token}`, { action: 'deny' })).toEqual([403, 'link_mismatch']);
      expect((await get(b.base, '/pauses')).body.pauses.map((listed: { pause_id: string }) => listed.pause_id)).toEqual([pause.pause_id]);
      expect((await get(b.base, '/conversations/hooked-svc/decisions')).body.decisions).toEqual([]);

      expect((await post(b.base, `/a/${token}`, {})).status).toBe(200);
      expect(await ws.waitFor((frame) => frame.type === 'debugger.resume' && frame.pause_id === pause.pause_id)).toMatchObject({ reason: 'continued', by: 'link' });
      for (const base of [b.base, a.base]) expect(await post(base, `/a/${token}`, {})).toMatchObject({ status: 409, body: { error: { code: 'pause_resolved' } } });

      const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
      expect((await post(b.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
      expect(await ws.waitFor((frame) => frame.type === 'run.end')).toMatchObject({ status: 'completed' });
      expect((await get(b.base, '/conversations/hooked-svc/decisions')).body.decisions[0]).toMatchObject({ pause_id: pause.pause_id, reason: 'continued', by: 'link' });
      // Once per instance owning the run: A sent it, B (which answered it) did not.
      expect(good.received.filter((item) => item.body.pause?.pause_id === pause.pause_id)).toHaveLength(1);
      for (const output of [a.stdout(), b.stdout()]) expect(output).not.toMatch(new RegExp(`${SECRET}|${LINK_SECRET}`));
      await ws.close();
    } finally {
      await Promise.all([good.close(), failing.close(), hanging.close()]);
    }
  }, 60_000);
});
