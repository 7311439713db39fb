import type { Browser, Page } from 'playwright-core';
import { enableStepMode, errorsOf, launchBrowser, newConvId, openDashboard, openPause, sendPrompt } from './helpers/browser.js';
import { startServer, type RunningServer } from './helpers/server.js';

const SCRIPT = {
  responses: [{ text: 'One moment.', tool_calls: [{ id: 'call_echo', name: 'echo', arguments: { message: 'both' } }] }, { text: 'Both pages saw this.' }],
};

let server: RunningServer;
let browser: Browser;
const pages: Page[] = [];

beforeAll(async () => {
  [server, browser] = await Promise.all([startServer({ script: SCRIPT }), launchBrowser()]);
});

afterAll(async () => {
  for (const page of pages) expect(errorsOf(page)).toEqual([]);
  await browser?.close();
  await server?.stop();
});

describe('dashboard: several pages on one conversation', () => {
  it('should close the card in both pages when one continues', async () => {
    const convId = newConvId('two');
    const [first, second] = await Promise.all([openDashboard(browser, server.url, convId), openDashboard(browser, server.url, convId)]);
    pages.push(first, second);
    await enableStepMode(first);
    await sendPrompt(first, 'watch me from two tabs');

    const cardInFirst = openPause(first, 'after_inference');
    const cardInSecond = openPause(second, 'after_inference');
    await Promise.all([cardInFirst.waitFor(), cardInSecond.waitFor()]);
    const pauseId = await cardInFirst.getAttribute('data-pause-id');
    expect(await cardInSecond.getAttribute('data-pause-id')).toBe(pauseId);
    // The second page never sent the prompt, yet shows it (from the conversation's turns).
    await expect.poll(() => second.getByTestId('user-prompt').textContent()).toBe('watch me from two tabs');

    await cardInSecond.getByTestId('pause-continue').click();
    const resolved = (page: Page) => page.locator(`[data-testid="pause-card"][data-pause-id="${pauseId}"][data-state="resolved"][data-reason="continued"]`);
    await Promise.all([resolved(first).waitFor(), resolved(second).waitFor()]);

    // The next pause shows up in both too, and the first page can take it from there.
    await Promise.all([openPause(first, 'after_tools').waitFor(), openPause(second, 'after_tools').waitFor()]);
    await openPause(first, 'after_tools').getByTestId('pause-continue').click();
    for (const page of [first, second]) {
      await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
      await expect.poll(() => page.locator('[data-testid="pause-card"][data-state="open"]').count()).toBe(0);
      await expect.poll(() => page.locator('[data-testid="assistant-body"]').last().textContent()).toBe('Both pages saw this.');
    }
  });
});
