import type { Page } from 'playwright-core';
import { enableStepMode, newConvId, newPage, openDashboard, openPause, sendPrompt } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

const SCRIPT = {
  responses: [{ text: 'Checking.', tool_calls: [{ id: 'call_echo', name: 'echo', arguments: { message: 'hi' } }] }, { text: 'Done.' }],
};

const suite = useDashboardSuite({ script: SCRIPT });

const currentConv = (p: Page): Promise<string> => p.evaluate(() => (window as unknown as { __stepwise: { convId: string } }).__stepwise.convId);

/** Clicks `+ New` and waits until the page is live on a conversation other than `previous`. */
async function pressNew(p: Page, previous: string | null): Promise<string> {
  await p.getByTestId('new-conversation').click();
  await expect.poll(() => currentConv(p)).not.toBe(previous);
  await p.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
  return currentConv(p);
}

describe('dashboard: + New keeps the step toggle', () => {
  it('should keep step mode on for the new conversation, on the server too, and pause its first run', async () => {
    const first = newConvId('keep-step');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, first));
    await enableStepMode(page);

    const enabled = page.waitForResponse((response) => response.url().endsWith('/debug/step/enable') && response.status() === 200);
    const second = await pressNew(page, first);
    await enabled;
    expect(await page.getByTestId('step-toggle').isChecked()).toBe(true);
    expect((await suite.server.api('GET', `/conversations/${second}`)).body.step_mode).toBe(true);
    // The old conversation keeps its own step mode.
    expect((await suite.server.api('GET', `/conversations/${first}`)).body.step_mode).toBe(true);

    await sendPrompt(page, 'echo hi');
    await openPause(page, 'after_inference').waitFor();
    // A later refresh of the conversation list does not undo the choice.
    await page.waitForResponse((response) => new URL(response.url()).pathname === '/conversations');
    expect(await page.getByTestId('step-toggle').isChecked()).toBe(true);
  });

  it('should keep step mode off when it was off', async () => {
    const first = newConvId('keep-off');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, first));
    const second = await pressNew(page, first);
    expect(await page.getByTestId('step-toggle').isChecked()).toBe(false);
    await sendPrompt(page, 'echo hi');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    expect(await page.locator('[data-testid="pause-card"]').count()).toBe(0);
    expect((await suite.server.api('GET', `/conversations/${second}`)).body.step_mode).toBe(false);
  });

  it('should carry a choice made before any conversation existed into the one + New creates', async () => {
    const page = suite.track(await newPage(suite.browser));
    await page.goto(suite.server.url);
    await page.getByTestId('step-toggle-label').click();
    const enabled = page.waitForResponse((response) => response.url().endsWith('/debug/step/enable') && response.status() === 200);
    const convId = await pressNew(page, null);
    await enabled;
    expect(await page.getByTestId('step-toggle').isChecked()).toBe(true);
    expect((await suite.server.api('GET', `/conversations/${convId}`)).body.step_mode).toBe(true);
  });
});
