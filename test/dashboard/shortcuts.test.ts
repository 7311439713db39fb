import { mkdir } from 'node:fs/promises';
import type { Locator, Page } from 'playwright-core';
import { enableStepMode, newConvId, openDashboard, openPause, sendPrompt, recordDecisions } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

// Three calls, one per inference: edited with `e`, denied with `d`, left to the deadline (action deny).
const call = (id: string, message: string) => ({ text: `Echoing ${message}.`, tool_calls: [{ id, name: 'echo', arguments: { message } }] });
const SCRIPT = { responses: [call('call_a', 'one'), call('call_b', 'two'), call('call_c', 'three'), { text: 'Done.' }] };
// Every pause the keyboard answers is answered well before this; the last one waits for it.
const PAUSE_TIMEOUT_MS = 8_000;

const suite = useDashboardSuite({ script: SCRIPT, pauseTimeoutMs: PAUSE_TIMEOUT_MS, extraArgs: ['--pause-timeout-action', 'deny'] });

const cardOf = (page: Page, pauseId: string): Locator => page.locator(`[data-testid="pause-card"][data-pause-id="${pauseId}"]`);

async function nextPause(page: Page, phase: string): Promise<Locator> {
  const open = openPause(page, phase);
  await open.waitFor({ timeout: 15_000 });
  return cardOf(page, (await open.getAttribute('data-pause-id')) as string);
}

const resolved = (page: Page, card: Locator) => card.and(page.locator('[data-state="resolved"]')).waitFor({ timeout: 15_000 });

describe('dashboard: keyboard shortcuts on the focused pause card', () => {
  it('should continue, deny and edit with c, d and e, show the keys, and never fire while typing', async () => {
    const convId = newConvId('keys');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    const decisions = recordDecisions(page);
    await enableStepMode(page);
    await sendPrompt(page, 'echo three things');

    const first = await nextPause(page, 'after_inference');
    // The keys are printed on the buttons they press.
    for (const [testid, key] of [['pause-continue', 'c'], ['pause-deny', 'd'], ['pause-edit', 'e']] as const) {
      expect(await first.getByTestId(testid).getByTestId('shortcut-hint').textContent()).toBe(key);
      expect(await first.getByTestId(testid).getAttribute('aria-keyshortcuts')).toBe(key);
    }
    // Typed into the composer, c d e are text: nothing is decided.
    await page.getByTestId('prompt-input').focus();
    await page.keyboard.type('cde');
    expect(await page.getByTestId('prompt-input').inputValue()).toBe('cde');
    expect(await first.getAttribute('data-mode')).toBe('view');
    expect(decisions).toEqual([]);
    await page.getByTestId('prompt-input').fill('');

    // e on the focused card opens the editor with the focus in it; typing there is text too.
    await first.focus();
    await page.keyboard.press('e');
    expect(await first.getAttribute('data-mode')).toBe('edit');
    const editor = first.locator('[data-testid="edit-args"][data-tool-call-id="call_a"]');
    expect(await editor.evaluate((node) => node === document.activeElement)).toBe(true);
    await page.keyboard.press('Control+A');
    await page.keyboard.type('{"message": "ced"}');
    expect(await first.getAttribute('data-mode')).toBe('edit');
    expect(decisions).toEqual([]);
    await first.getByTestId('edit-submit').click();
    await resolved(page, first);
    expect(await first.getAttribute('data-reason')).toBe('edited');

    let after = await nextPause(page, 'after_tools');
    await after.focus();
    await page.keyboard.press('c');
    await resolved(page, after);
    expect(await after.getAttribute('data-reason')).toBe('continued');

    // d opens the deny form with the reason focused; its text, c d e and all, is what the model sees.
    const second = await nextPause(page, 'after_inference');
    await second.focus();
    await page.keyboard.press('d');
    expect(await second.getAttribute('data-mode')).toBe('deny');
    await page.keyboard.type('no: declined, covered elsewhere');
    expect(await second.getAttribute('data-mode')).toBe('deny');
    await mkdir('test-results', { recursive: true });
    await second.screenshot({ path: 'test-results/dashboard-shortcut-deny.png' });
    await second.getByTestId('deny-submit').click();
    await resolved(page, second);
    await second.and(page.locator('[data-decided="true"]')).waitFor({ timeout: 10_000 });
    expect(await second.getByTestId('decision-message').textContent()).toBe('no: declined, covered elsewhere');
    expect(await second.getByTestId('pause-resolution').textContent()).toBe('Denied by local: “no: declined, covered elsewhere”');
    expect(await page.locator('[data-tool-call-id="call_b"] [data-testid="tool-error"]').textContent()).toContain('no: declined, covered elsewhere');

    after = await nextPause(page, 'after_tools');
    await after.focus();
    await page.keyboard.press('c');
    await resolved(page, after);

    // Left alone: the deadline runs the server's timeout action, deny, and the card says exactly that.
    const third = await nextPause(page, 'after_inference');
    await resolved(page, third);
    await third.and(page.locator('[data-decided="true"]')).waitFor({ timeout: 10_000 });
    expect(await third.getAttribute('data-reason')).toBe('timeout');
    expect(await third.getByTestId('decision-timeout-action').textContent()).toBe('deny');
    expect(await third.getByTestId('decision-by').textContent()).toBe('system');
    expect(await third.getByTestId('pause-resolution').textContent()).toBe('Deadline passed: timeout action deny ran by system');

    expect(decisions.map((body) => JSON.parse(body).action)).toEqual(['edit', 'continue', 'deny', 'continue']);
    expect(JSON.parse(decisions[0]!).edits).toEqual({ call_a: { message: 'ced' } });
    await suite.server.api('POST', '/chat/cancel', { conv_id: convId });
    // One pause runs to its 8 s deadline: more than the default test timeout leaves on a busy machine.
  }, 45_000);
});
