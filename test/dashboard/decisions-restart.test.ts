import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { get, post } from '../helpers/server-harness.js';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { errorsOf, launchBrowser, openDashboard } from './helpers/browser.js';
import { TOOLS_FILE } from './helpers/server.js';

const SCRIPT = { responses: [{ text: 'Echoing.', tool_calls: [{ id: 'call_x', name: 'echo', arguments: { message: 'secret' } }] }, { text: 'Denied, fine.' }] };

/** The cards of a SQLite-backed server after it restarted: frames replayed from the store, decisions from its audit trail. */
describe('dashboard: decisions after a server restart', () => {
  let dir: string;
  let browser: Browser | undefined;
  const servers: CliServer[] = [];
  beforeAll(async () => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'stepwise-dash-restart-'));
    writeFileSync(join(dir, 'script.json'), JSON.stringify(SCRIPT));
    browser = await launchBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    for (const server of servers) await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const serve = async (): Promise<CliServer> => {
    const args = ['--port', '0', '--debug', '--data-dir', join(dir, 'data'), '--script', join(dir, 'script.json'), '--tools', TOOLS_FILE, '--pause-timeout-ms', '120000'];
    const server = await startCli(args);
    servers.push(server);
    return server;
  };

  it('should show who denied the call and why once the server is back, from the store', async () => {
    const first = await serve();
    const ws = await SemClient.connect(`${first.wsBase}/ws?conv_id=restart-1`);
    expect((await post(first.base, '/chat', { prompt: 'echo my secret', conv_id: 'restart-1', overrides: { step_mode: true } })).status).toBe(200);
    const pause = await ws.next('debugger.pause');
    expect((await post(first.base, '/debug/continue', { pause_id: pause.pause_id, action: 'deny', reason: 'keep it secret' })).status).toBe(200);
    const afterTools = await ws.next('debugger.pause');
    await post(first.base, '/debug/continue', { pause_id: afterTools.pause_id });
    await ws.next('run.end');
    await ws.close();
    expect(await first.stop('SIGTERM')).toBe(0);

    const second = await serve();
    expect((await get(second.base, '/conversations/restart-1/decisions')).body.decisions).toHaveLength(2);
    const page = await openDashboard(browser as Browser, second.base, 'restart-1');
    // A card rebuilt from replayed frames, or, where the frames did not come back, the decision alone:
    // either way what is shown comes from the store's audit trail.
    const card = page.locator(`[data-pause-id="${pause.pause_id}"]:is([data-testid="pause-card"][data-decided="true"], [data-testid="earlier-decision"])`);
    await card.waitFor({ timeout: 10_000 });
    expect(await card.getAttribute('data-reason')).toBe('denied');
    expect(await card.getAttribute('data-by')).toBe('local');
    expect(await card.getByTestId('decision-by').textContent()).toBe('local');
    expect(await card.getByTestId('decision-message').textContent()).toBe('keep it secret');
    expect(await card.getByTestId('decision-denied').getAttribute('data-tool-call-id')).toBe('call_x');
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  }, 60_000);
});
