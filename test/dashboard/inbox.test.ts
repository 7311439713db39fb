import type { Locator, Page } from 'playwright-core';
import { newConvId, newPage } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

// Each conversation asks for one echo call, then answers.
const SCRIPT = { responses: [{ text: 'Echoing.', tool_calls: [{ id: 'call_a', name: 'echo', arguments: { message: 'one' } }] }, { text: 'Done.' }] };
const suite = useDashboardSuite({ script: SCRIPT });

/** The inbox page of a viewer of its own (its own browser context), once its socket is live. */
async function openInbox(): Promise<Page> {
  const page = suite.track(await newPage(suite.browser));
  await page.goto(`${suite.server.url}/inbox.html`);
  await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
  return page;
}

const rowOf = (page: Page, convId: string, phase: string): Locator => page.locator(`[data-testid="inbox-row"][data-conv-id="${convId}"][data-phase="${phase}"]`);
const gone = (row: Locator) => row.waitFor({ state: 'detached', timeout: 15_000 });

async function stepped(convId: string): Promise<void> {
  const started = await suite.server.api('POST', '/chat', { prompt: 'echo something', conv_id: convId, overrides: { step_mode: true } });
  expect(started.status).toBe(200);
}

async function decisionsOf(convId: string): Promise<any[]> {
  return (await suite.server.api('GET', `/conversations/${convId}/decisions`)).body.decisions;
}

describe('dashboard: the inbox, with two viewers', () => {
  it('should show every waiting pause live, count down, and be answered from either viewer with j/k, c, d and e', async () => {
    const [a, b] = await Promise.all([openInbox(), openInbox()]);
    const first = newConvId('inbox');
    const second = newConvId('inbox');
    await stepped(first);
    await stepped(second);
    for (const page of [a, b]) {
      await rowOf(page, first, 'after_inference').waitFor();
      await rowOf(page, second, 'after_inference').waitFor();
      // Soonest deadline first: the first conversation paused first.
      const order = await page.locator('[data-testid="inbox-row"]').evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.convId));
      expect(order.indexOf(first)).toBeLessThan(order.indexOf(second));
    }
    // The countdown is live: it goes down on its own.
    const countdown = rowOf(a, first, 'after_inference').getByTestId('inbox-countdown');
    const shown = Number.parseInt((await countdown.textContent()) ?? '', 10);
    expect(shown).toBeGreaterThan(100);
    await a.waitForFunction(([pauseCountdown, before]) => Number.parseInt(document.querySelector(pauseCountdown as string)?.textContent ?? '', 10) < (before as number), [
      `[data-testid="inbox-row"][data-conv-id="${first}"] [data-testid="inbox-countdown"]`,
      shown,
    ] as const);

    // Viewer A moves to the second pause with j and denies it with d: it leaves both inboxes.
    await selectRow(a, second);
    await a.keyboard.press('d');
    await Promise.all([gone(rowOf(a, second, 'after_inference')), gone(rowOf(b, second, 'after_inference'))]);
    expect((await decisionsOf(second))[0]).toMatchObject({ reason: 'denied' });

    // Viewer B edits the first pause's arguments with e, sends them with Ctrl+Enter.
    await selectRow(b, first);
    await b.keyboard.press('e');
    const editor = rowOf(b, first, 'after_inference').getByTestId('inbox-edit-args');
    expect(await editor.evaluate((node) => node === document.activeElement)).toBe(true);
    await b.keyboard.press('Control+A');
    await b.keyboard.type('{"message": "edited in the inbox"}');
    await b.keyboard.press('Control+Enter');
    await Promise.all([gone(rowOf(a, first, 'after_inference')), gone(rowOf(b, first, 'after_inference'))]);
    expect((await decisionsOf(first))[0]).toMatchObject({ reason: 'edited', edits: { call_a: { after: { message: 'edited in the inbox' } } } });

    // The tools ran: the next pause of the first conversation reaches both; both press c, one wins.
    await Promise.all([rowOf(a, first, 'after_tools').waitFor(), rowOf(b, first, 'after_tools').waitFor()]);
    await selectRow(a, first);
    await selectRow(b, first);
    await Promise.all([a.keyboard.press('c'), b.keyboard.press('c')]);
    await Promise.all([gone(rowOf(a, first, 'after_tools')), gone(rowOf(b, first, 'after_tools'))]);
    expect((await decisionsOf(first)).map((decision) => decision.reason)).toEqual(['edited', 'continued']);
    // The denied call's result (the denial) paused the second conversation after tools: B continues it.
    await rowOf(b, second, 'after_tools').waitFor();
    await selectRow(b, second);
    await b.keyboard.press('c');
    await Promise.all([gone(rowOf(a, second, 'after_tools')), gone(rowOf(b, second, 'after_tools'))]);
    for (const page of [a, b]) {
      expect(await page.getByTestId('error-banner').isHidden()).toBe(true);
      await page.getByTestId('inbox-empty').waitFor();
    }
  }, 45_000);
});

describe('dashboard: an inbox with more waiting than it shows', () => {
  it('should show the soonest ?limit= pauses, say more wait, and fill up from the server as rows are answered', async () => {
    const convs = [newConvId('window'), newConvId('window'), newConvId('window')];
    for (const convId of convs) await stepped(convId);
    const soonest = async (): Promise<string[]> => (await suite.server.api('GET', '/pauses')).body.pauses.map((pause: { pause_id: string }) => pause.pause_id);
    const all = await soonest();
    expect(all.length).toBeGreaterThanOrEqual(3);
    const limit = all.length - 1;

    const page = suite.track(await newPage(suite.browser));
    await page.goto(`${suite.server.url}/inbox.html?limit=${limit}`);
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    const shown = () => page.locator('[data-testid="inbox-row"]').evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.pauseId));
    await page.waitForFunction((count) => document.querySelectorAll('[data-testid="inbox-row"]').length === count, limit);
    expect(await shown()).toEqual(all.slice(0, limit));
    await page.getByTestId('inbox-truncated').waitFor();
    expect(await page.getByTestId('inbox-truncated').textContent()).toContain(`${limit} soonest`);

    // The selected row is the soonest: continuing it makes room, and the page lists the next one in.
    await page.keyboard.press('c');
    await gone(page.locator(`[data-testid="inbox-row"][data-pause-id="${all[0]}"]`));
    await page.locator(`[data-testid="inbox-row"][data-pause-id="${all[limit]}"]`).waitFor({ timeout: 15_000 });
    const now = await soonest();
    await page.waitForFunction((ids) => Array.from(document.querySelectorAll('[data-testid="inbox-row"]')).map((row) => (row as HTMLElement).dataset.pauseId).join() === ids.join(), now.slice(0, limit));
    expect(await page.getByTestId('inbox-truncated').isVisible()).toBe(now.length > limit);
    expect(await page.getByTestId('error-banner').isHidden()).toBe(true);
    for (const convId of convs) await suite.server.api('POST', '/chat/cancel', { conv_id: convId });
  }, 45_000);
});

/** Moves the selection with j and k until it is on the conversation's row. */
async function selectRow(page: Page, convId: string): Promise<void> {
  const selectedConv = () => page.locator('[data-testid="inbox-row"][data-selected="true"]').getAttribute('data-conv-id');
  const order = await page.locator('[data-testid="inbox-row"]').evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset.convId));
  const target = order.indexOf(convId);
  expect(target).toBeGreaterThanOrEqual(0);
  const at = order.indexOf((await selectedConv()) ?? '');
  for (let i = at; i < target; i += 1) await page.keyboard.press('j');
  for (let i = at; i > target; i -= 1) await page.keyboard.press('k');
  expect(await selectedConv()).toBe(convId);
}
