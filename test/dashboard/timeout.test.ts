import type { Browser, Page } from 'playwright-core';
import { enableStepMode, errorsOf, launchBrowser, newConvId, openDashboard, openPause, sendPrompt } from './helpers/browser.js';
import { startServer, type RunningServer } from './helpers/server.js';

const SCRIPT = {
  responses: [{ text: 'Waiting on you.', tool_calls: [{ id: 'call_echo', name: 'echo', arguments: { message: 'late' } }] }, { text: 'Nobody answered, so I went on.' }],
};

let server: RunningServer;
let browser: Browser;
let page: Page | undefined;

beforeAll(async () => {
  // Short pauses; the default timeout action is `continue`.
  [server, browser] = await Promise.all([startServer({ script: SCRIPT, pauseTimeoutMs: 1_500 }), launchBrowser()]);
});

afterAll(async () => {
  await page?.close();
  await browser?.close();
  await server?.stop();
});

describe('dashboard: a pause nobody answers', () => {
  it('should count down to the deadline and close the card as timed out', async () => {
    page = await openDashboard(browser, server.url, newConvId('timeout'));
    await enableStepMode(page);
    await sendPrompt(page, 'I will not answer');
    const card = openPause(page, 'after_inference');
    await card.waitFor();
    const pauseId = await card.getAttribute('data-pause-id');
    expect(Number(await card.getAttribute('data-remaining-ms'))).toBeLessThanOrEqual(2_500);

    const timedOut = page.locator(`[data-testid="pause-card"][data-pause-id="${pauseId}"][data-state="resolved"][data-reason="timeout"]`);
    await timedOut.waitFor({ timeout: 10_000 });
    expect(await timedOut.getByTestId('pause-resolution').textContent()).toContain('Deadline passed');
    // The timeout action was `continue`: the tool ran, and the later pause timed out too.
    await expect.poll(() => page!.locator('[data-tool-call-id="call_echo"] [data-testid="tool-result"]').textContent(), { timeout: 10_000 }).toContain('late');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor({ timeout: 10_000 });
    expect(await page.locator('[data-testid="pause-card"][data-reason="timeout"]').count()).toBe(2);
    expect(errorsOf(page)).toEqual([]);
  });
});
