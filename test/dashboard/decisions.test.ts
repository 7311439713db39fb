import { mkdir } from 'node:fs/promises';
import type { Locator, Page } from 'playwright-core';
import { enableStepMode, newConvId, openDashboard, openPause, sendPrompt } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

// Four tool calls, one inference each: continued, edited, denied, left to time out; then the answer.
const call = (id: string, message: string) => ({ text: `Echoing ${message}.`, tool_calls: [{ id, name: 'echo', arguments: { message } }] });
const SCRIPT = {
  responses: [call('call_a', 'one'), call('call_b', 'two'), call('call_c', 'three'), call('call_d', 'four'), { text: 'All four handled.' }],
};
// Short enough that the test waits little for the one pause nobody answers, long enough that every
// pause the page answers is answered well before it.
const PAUSE_TIMEOUT_MS = 6_000;

const suite = useDashboardSuite({ script: SCRIPT, pauseTimeoutMs: PAUSE_TIMEOUT_MS });

const cardOf = (page: Page, pauseId: string): Locator => page.locator(`[data-testid="pause-card"][data-pause-id="${pauseId}"]`);

/** Waits for the next open pause at `phase`, lets `act` answer it on the card, and waits until it is resolved. */
async function answer(page: Page, phase: string, act: (card: Locator) => Promise<void>): Promise<string> {
  const open = openPause(page, phase);
  await open.waitFor({ timeout: 15_000 });
  const pauseId = (await open.getAttribute('data-pause-id')) as string;
  const card = cardOf(page, pauseId);
  await act(card);
  await card.and(page.locator('[data-state="resolved"]')).waitFor({ timeout: 15_000 });
  return pauseId;
}

const cont = (card: Locator) => card.getByTestId('pause-continue').click();

/** What the cards say about each decided pause: the assertions made live and after the reload. */
async function expectDecisions(page: Page, ids: { continued: string; edited: string; denied: string; timedOut: string }): Promise<void> {
  const decided = (id: string) => cardOf(page, id).and(page.locator('[data-decided="true"]'));
  for (const id of Object.values(ids)) await decided(id).waitFor({ timeout: 10_000 });

  const continued = cardOf(page, ids.continued);
  expect(await continued.getAttribute('data-reason')).toBe('continued');
  expect(await continued.getByTestId('decision-by').textContent()).toBe('local');
  expect(await continued.getByTestId('pause-resolution').textContent()).toContain('by local');

  const edited = cardOf(page, ids.edited);
  expect(await edited.getAttribute('data-reason')).toBe('edited');
  expect(await edited.getByTestId('decision-by').textContent()).toBe('local');
  const edit = edited.locator('[data-testid="decision-edit"][data-tool-call-id="call_b"]');
  expect(JSON.parse((await edit.getByTestId('edit-before').textContent()) as string)).toEqual({ message: 'two' });
  expect(JSON.parse((await edit.getByTestId('edit-after').textContent()) as string)).toEqual({ message: 'TWO' });

  const denied = cardOf(page, ids.denied);
  expect(await denied.getAttribute('data-reason')).toBe('denied');
  expect(await denied.getByTestId('decision-by').textContent()).toBe('local');
  expect(await denied.getByTestId('decision-denied').evaluateAll((nodes) => nodes.map((n) => (n as HTMLElement).dataset.toolCallId))).toEqual(['call_c']);
  expect(await denied.getByTestId('decision-message').textContent()).toBe('not this one');

  const timedOut = cardOf(page, ids.timedOut);
  expect(await timedOut.getAttribute('data-reason')).toBe('timeout');
  expect(await timedOut.getAttribute('data-by')).toBe('system');
  expect(await timedOut.getByTestId('decision-by').textContent()).toBe('system');
  expect(await timedOut.getByTestId('decision-timeout-action').textContent()).toBe('continue');
}

describe('dashboard: who decided each pause, and what they changed', () => {
  it('should show by, reason, denied calls, message and edits on resolved cards, live and after a reload', async () => {
    const convId = newConvId('decisions');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    await enableStepMode(page);
    await sendPrompt(page, 'Echo four things');

    const continued = await answer(page, 'after_inference', cont);
    await answer(page, 'after_tools', cont);
    const edited = await answer(page, 'after_inference', async (card) => {
      await card.getByTestId('pause-edit').click();
      await card.locator('[data-testid="edit-args"][data-tool-call-id="call_b"]').fill('{"message": "TWO"}');
      await card.getByTestId('edit-submit').click();
    });
    await answer(page, 'after_tools', cont);
    const denied = await answer(page, 'after_inference', async (card) => {
      await card.getByTestId('pause-deny').click();
      await card.getByTestId('deny-reason').fill('not this one');
      await card.getByTestId('deny-submit').click();
    });
    await answer(page, 'after_tools', cont);
    // Nobody answers this one: its deadline resolves it with the timeout action (`continue`).
    const timedOut = await answer(page, 'after_inference', async () => undefined);
    await answer(page, 'after_tools', cont);
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor({ timeout: 15_000 });
    const ids = { continued, edited, denied, timedOut };

    // The audit trail the cards read is the server's own.
    const trail = await suite.server.api('GET', `/conversations/${convId}/decisions`);
    expect(trail.status).toBe(200);
    const byPause = new Map(trail.body.decisions.map((d: { pause_id: string }) => [d.pause_id, d]));
    expect(byPause.get(edited)).toMatchObject({ reason: 'edited', by: 'local', edits: { call_b: { before: { message: 'two' }, after: { message: 'TWO' } } } });
    expect(byPause.get(denied)).toMatchObject({ reason: 'denied', by: 'local', tool_call_ids: ['call_c'], message: 'not this one' });
    expect(byPause.get(timedOut)).toMatchObject({ reason: 'timeout', by: 'system' });

    await expectDecisions(page, ids);
    await mkdir('test-results', { recursive: true });
    await cardOf(page, edited).screenshot({ path: 'test-results/dashboard-decision-edit.png' });

    // A reload replays the frames; the cards read the same decisions again.
    await page.reload();
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    await expectDecisions(page, ids);
    // Every pause came back with its frames: none is shown as a bare earlier decision.
    expect(await page.getByTestId('earlier-decision').count()).toBe(0);
  });
});
