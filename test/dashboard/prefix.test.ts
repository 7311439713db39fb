import type { Browser } from 'playwright-core';
import { toolThenAnswer } from '../helpers/server-harness.js';
import { enableStepMode, errorsOf, launchBrowser, newConvId, newPage, openPause, sendPrompt } from './helpers/browser.js';
import { HOST_PAGE, startUnderPrefix, type PrefixedServer } from './helpers/prefix.js';

const PREFIX = '/agent';

let server: PrefixedServer;
let browser: Browser;

beforeAll(async () => {
  [server, browser] = await Promise.all([startUnderPrefix(PREFIX, toolThenAnswer(1, 5)), launchBrowser()]);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('dashboard: served under a prefix, in a host application', () => {
  it('should stream and steer a run with every request and its WebSocket under the prefix', async () => {
    const page = await newPage(browser);
    const sent: string[] = [];
    page.on('request', (request) => sent.push(request.url()));
    page.on('websocket', (socket) => sent.push(socket.url()));
    try {
      await page.goto(`${server.url}${PREFIX}/#/c/${newConvId('prefix')}`);
      await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
      await enableStepMode(page);
      await sendPrompt(page, 'Add 0 and 2');

      for (const phase of ['after_inference', 'after_tools']) {
        const card = openPause(page, phase);
        await card.waitFor();
        await card.getByTestId('pause-continue').click();
      }
      const answer = page.locator('[data-testid="assistant-text"][data-state="final"] [data-testid="assistant-body"]').last();
      await expect.poll(() => answer.textContent()).toBe('The sum is 2. Done.');

      const paths = sent.filter((url) => /^(http|ws)s?:/.test(url)).map((url) => new URL(url));
      expect(paths.filter((url) => !url.pathname.startsWith(`${PREFIX}/`)).map(String)).toEqual([]);
      expect(paths.filter((url) => url.protocol === 'ws:').map((url) => url.pathname)).toContain(`${PREFIX}/ws`);
      expect(paths.map((url) => url.pathname)).toContain(`${PREFIX}/chat`);
      expect(paths.some((url) => url.pathname.startsWith(`${PREFIX}/pauses/`) || url.pathname === `${PREFIX}/debug/continue`)).toBe(true);
      expect(errorsOf(page)).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('should leave the host application its own routes', async () => {
    expect(await (await fetch(`${server.url}/`)).text()).toBe(HOST_PAGE);
    expect(await (await fetch(`${server.url}${PREFIX}/healthz`)).json()).toEqual({ ok: true });
  });
});
