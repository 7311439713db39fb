import { mkdir } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { enableStepMode, errorsOf, launchBrowser, newConvId, openDashboard, openPause, sendPrompt } from './helpers/browser.js';
import { startServer, type RunningServer } from './helpers/server.js';

const FINAL = 'Echo said hello and the sum is 3. All done.';
const SCRIPT = {
  chunk_delay_ms: 5,
  responses: [
    {
      text: 'Let me check both.',
      tool_calls: [
        { id: 'call_echo', name: 'echo', arguments: { message: 'hello' } },
        { id: 'call_add', name: 'add', arguments: { a: 1, b: 2 } },
      ],
    },
    { text: FINAL },
  ],
};

let server: RunningServer;
let browser: Browser;
let page: Page | undefined;

beforeAll(async () => {
  [server, browser] = await Promise.all([startServer({ script: SCRIPT, pauseTimeoutMs: 120_000 }), launchBrowser()]);
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

afterEach(async () => {
  if (page) expect(errorsOf(page)).toEqual([]);
  await page?.close();
  page = undefined;
});

describe('dashboard: a run in step mode', () => {
  it('should show the pause card with the calls and a live countdown, then continue to the final text', async () => {
    page = await openDashboard(browser, server.url, newConvId('step'));
    await enableStepMode(page);
    await sendPrompt(page, 'Echo hello and add 1 and 2');

    const card = openPause(page, 'after_inference');
    await card.waitFor();
    await expect.poll(() => card.getByTestId('pause-call').evaluateAll((calls) => calls.map((c) => (c as HTMLElement).dataset.name))).toEqual(['echo', 'add']);
    expect(await card.locator('[data-tool-call-id="call_echo"] [data-testid="pause-call-args"]').textContent()).toContain('"message": "hello"');
    expect(await card.locator('[data-tool-call-id="call_add"] [data-testid="pause-call-args"]').textContent()).toContain('"a": 1');
    expect(await card.getByTestId('pause-summary').textContent()).not.toBe('');

    // The countdown is live: the remaining time shrinks while we watch, and is near the 120 s timeout.
    const first = Number(await card.getAttribute('data-remaining-ms'));
    expect(first).toBeGreaterThan(100_000);
    // Skew correction is only as exact as the hello's transit time, hence the second of slack.
    expect(first).toBeLessThanOrEqual(121_000);
    await expect.poll(async () => Number(await card.getAttribute('data-remaining-ms')), { timeout: 5_000 }).toBeLessThan(first - 500);
    expect(await card.getByTestId('pause-countdown').textContent()).toMatch(/\d+:\d\d left|s left/);

    await mkdir('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/dashboard-pause.png', fullPage: false });

    const pauseId = await card.getAttribute('data-pause-id');
    await card.getByTestId('pause-continue').click();
    const resolved = page.locator(`[data-testid="pause-card"][data-pause-id="${pauseId}"][data-state="resolved"]`);
    await resolved.waitFor();
    expect(await resolved.getAttribute('data-reason')).toBe('continued');
    expect(await resolved.getByTestId('pause-resolution').textContent()).toContain('Continued');

    // The tools ran: each card shows its result and a duration.
    const echo = page.locator('[data-testid="tool-call"][data-tool-call-id="call_echo"]');
    const add = page.locator('[data-testid="tool-call"][data-tool-call-id="call_add"]');
    await echo.locator('[data-done="true"], [data-testid="tool-result"]').first().waitFor();
    await expect.poll(() => echo.getByTestId('tool-result').textContent()).toContain('hello');
    await expect.poll(() => add.getByTestId('tool-result').textContent()).toContain('3');
    expect(await add.getByTestId('tool-args').textContent()).toContain('"b": 2');

    // Step mode also stops after the tools; continuing there lets the model answer.
    const afterTools = openPause(page, 'after_tools');
    await afterTools.waitFor();
    await afterTools.getByTestId('pause-continue').click();

    const run = page.locator('[data-testid="run"]');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    await expect.poll(() => run.locator('[data-testid="assistant-text"][data-state="final"] [data-testid="assistant-body"]').last().textContent()).toBe(FINAL);
    expect(await run.getByTestId('user-prompt').textContent()).toBe('Echo hello and add 1 and 2');
    expect(await run.getByTestId('run-usage').textContent()).toMatch(/usage: \d+ input \+ \d+ output tokens/);
    expect(await page.locator('[data-testid="pause-card"][data-state="open"]').count()).toBe(0);
  });

  it('should show every pause already open when the page loads, once', async () => {
    const convId = newConvId('late');
    page = await openDashboard(browser, server.url, convId);
    await enableStepMode(page);
    await sendPrompt(page, 'go');
    await openPause(page, 'after_inference').waitFor();
    await page.close();

    // A page opened now learns of the pause from ws.hello and from the replayed frames: one card.
    page = await openDashboard(browser, server.url, convId);
    const card = openPause(page, 'after_inference');
    await card.waitFor();
    await page.locator('[data-testid="run"] [data-testid="tool-call"][data-tool-call-id="call_add"]').waitFor();
    expect(await page.locator('[data-testid="pause-card"]').count()).toBe(1);
    expect(await page.getByTestId('step-toggle').isChecked()).toBe(true);
  });
});
