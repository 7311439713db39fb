import { mkdir } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { enableStepMode, newConvId, openDashboard, openPause, sendPrompt } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

const SCRIPT = {
  responses: [{ text: 'Checking.', tool_calls: [{ id: 'call_echo', name: 'echo', arguments: { message: 'hi' } }] }, { text: 'Done.' }, { text: 'Again.' }],
};

const suite = useDashboardSuite({ script: SCRIPT });

const currentConv = (p: Page): Promise<string> => p.evaluate(() => (window as unknown as { __stepwise: { convId: string } }).__stepwise.convId);

/** Waits until the page is live on a conversation other than `previous`, and returns it. */
async function movedFrom(p: Page, previous: string): Promise<string> {
  await expect.poll(() => currentConv(p)).not.toBe(previous);
  await p.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
  return currentConv(p);
}

describe('dashboard: Fork on turns and on pending pauses', () => {
  it('should fork a finished turn into a new conversation that shows the copied turn', async () => {
    const source = newConvId('fork-turn');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, source));
    await sendPrompt(page, 'echo hi');
    const run = page.locator('[data-testid="run"][data-status="completed"]');
    await run.waitFor({ timeout: 15_000 });
    const turnId = (await run.getAttribute('data-turn-id')) as string;

    await run.getByTestId('turn-fork').click();
    const fork = await movedFrom(page, source);
    expect(page.url()).toContain(`#/c/${fork}`);
    const copied = page.locator(`[data-testid="history-turn"][data-turn-id="${turnId}"]`);
    await copied.waitFor();
    expect(await copied.getByTestId('history-prompt').textContent()).toBe('echo hi');
    expect(await copied.getByTestId('history-text').allTextContents()).toEqual(['Checking.', 'Done.']);
    const item = page.locator(`[data-testid="conversation-item"][data-conv-id="${fork}"]`);
    await item.getByTestId('conv-fork').waitFor();
    expect((await suite.server.api('GET', `/conversations/${fork}`)).body.forked_from).toEqual({ conv_id: source, turn_id: turnId });
  });

  it('should fork at a pending pause: the fork opens paused at the same calls, and the source stays paused', async () => {
    const source = newConvId('fork-pause');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, source));
    await enableStepMode(page);
    await sendPrompt(page, 'echo hi, step by step');
    const card = openPause(page, 'after_inference');
    await card.waitFor();
    const pauseId = (await card.getAttribute('data-pause-id')) as string;

    await card.getByTestId('pause-fork').click();
    const fork = await movedFrom(page, source);
    const again = openPause(page, 'after_inference');
    await again.waitFor();
    expect(await again.getAttribute('data-pause-id')).not.toBe(pauseId);
    expect(await again.locator('[data-tool-call-id="call_echo"] [data-testid="pause-call-args"]').textContent()).toContain('"message": "hi"');
    // What the model said before the pause streamed in the source: the fork draws it from the copied turn.
    const copied = page.getByTestId('copied-blocks');
    await copied.waitFor();
    expect(await copied.getByTestId('history-text').allTextContents()).toEqual(['Checking.']);
    expect(await copied.locator('[data-testid="history-tool"]').getAttribute('data-tool-call-id')).toBe('call_echo');
    await mkdir('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/dashboard-fork-pause.png' });

    // Decided in the fork; the source's pause is still there, unanswered.
    await again.getByTestId('pause-continue').click();
    await page.locator(`[data-testid="pause-card"][data-state="resolved"][data-reason="continued"]`).waitFor();
    const pauses = await suite.server.api('GET', `/debug/pauses?conv_id=${source}`);
    expect(pauses.body.pauses.map((p: { pause_id: string }) => p.pause_id)).toEqual([pauseId]);
    expect((await suite.server.api('GET', `/conversations/${fork}`)).body.forked_from).toEqual({ conv_id: source, pause_id: pauseId });
    await suite.server.api('POST', '/chat/cancel', { conv_id: fork });
    await suite.server.api('POST', '/chat/cancel', { conv_id: source });
  });
});
