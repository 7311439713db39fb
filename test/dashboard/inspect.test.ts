import { mkdir } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { newConvId, newPage, openDashboard, sendPrompt } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

// One tool call, then an answer: enough frames of every family to click on.
const SCRIPT = {
  responses: [{ text: 'Let me echo that.', tool_calls: [{ id: 'call_echo', name: 'echo', arguments: { message: 'hello' } }] }, { text: 'It said hello.' }],
};

const suite = useDashboardSuite({ script: SCRIPT });

const frameRow = (page: Page, type: string) => page.locator(`[data-testid="frame"][data-type="${type}"]`);

async function finishedRun(page: Page, prompt: string): Promise<void> {
  await sendPrompt(page, prompt);
  await page.locator('[data-testid="run"][data-status="completed"]').waitFor({ timeout: 15_000 });
}

describe('dashboard: inspecting frames, inferences and conversations', () => {
  it('should show a clicked frame payload as JSON, fold it, and close it', async () => {
    const convId = newConvId('frame');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    await finishedRun(page, 'echo hello');
    const detail = page.getByTestId('frame-detail');
    expect(await detail.isHidden()).toBe(true);

    const start = frameRow(page, 'tool.start');
    await start.click();
    await detail.waitFor();
    expect(await page.getByTestId('frame-detail-title').textContent()).toBe(`tool.start · seq ${await start.getAttribute('data-seq')}`);
    // The raw JSON is the whole frame as the server sent it.
    const payload = JSON.parse((await page.getByTestId('frame-detail-json').textContent()) as string);
    expect(payload).toMatchObject({ type: 'tool.start', id: 'call_echo', name: 'echo', input: { message: 'hello' } });
    expect(payload.seq).toBe(Number(await start.getAttribute('data-seq')));
    // The tree folds: the `input` object is a <details> that closes on its summary.
    const inputNode = page.locator('[data-testid="frame-detail-tree"] .json-entry', { hasText: 'input:' }).locator('details').first();
    expect(await inputNode.getAttribute('open')).not.toBeNull();
    await inputNode.locator('summary').click();
    expect(await inputNode.getAttribute('open')).toBeNull();
    await mkdir('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/dashboard-frame-detail.png' });

    // Another row replaces it; clicking that row again closes it; so does the close button.
    const final = frameRow(page, 'llm.final').last();
    await final.click();
    expect(JSON.parse((await page.getByTestId('frame-detail-json').textContent()) as string)).toMatchObject({ type: 'llm.final', text: 'It said hello.' });
    await final.click();
    expect(await detail.isHidden()).toBe(true);
    await start.click();
    await page.getByTestId('frame-detail-close').click();
    expect(await detail.isHidden()).toBe(true);
  });

  it('should show what each inference returned: text, tool calls, usage and stop reason', async () => {
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, newConvId('reply')));
    await finishedRun(page, 'echo hello');
    const replies = page.getByTestId('inference-reply');
    expect(await replies.count()).toBe(2);
    const first = replies.first();
    await first.locator('summary').click();
    expect(await first.getByTestId('reply-text').textContent()).toBe('Let me echo that.');
    expect(await first.getByTestId('reply-call').evaluateAll((nodes) => nodes.map((n) => (n as HTMLElement).dataset.toolCallId))).toEqual(['call_echo']);
    // The same figures the llm.final frame carries, read straight from it.
    await frameRow(page, 'llm.final').first().click();
    const frame = JSON.parse((await page.getByTestId('frame-detail-json').textContent()) as string);
    expect(await first.getByTestId('reply-stop-reason').textContent()).toBe(String(frame.metadata.stop_reason));
    expect(await first.getByTestId('reply-usage').textContent()).toBe(`${frame.metadata.usage.input_tokens} in / ${frame.metadata.usage.output_tokens} out tokens`);
    expect(await replies.nth(1).getByTestId('reply-call').count()).toBe(0);
    await first.screenshot({ path: 'test-results/dashboard-inference-reply.png' });
  });

  it('should name conversations by their first prompt, keep the id on hover, and after a reload', async () => {
    const convId = newConvId('named');
    const prompt = 'Please echo a rather long first prompt so the sidebar has to cut it short somewhere';
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    await finishedRun(page, prompt);
    const label = page.locator(`[data-testid="conversation-item"][data-conv-id="${convId}"] [data-testid="conv-label"][data-kind="prompt"]`);
    await label.waitFor({ timeout: 10_000 });
    const text = (await label.textContent()) as string;
    expect(text.endsWith('…')).toBe(true);
    expect(prompt.startsWith(text.slice(0, -1))).toBe(true);
    expect(await label.getAttribute('title')).toBe(`${convId}\n${prompt}`);

    // A fresh page (nothing remembered) reads it from GET /conversations/:id.
    const other = suite.track(await newPage(suite.browser));
    await other.goto(`${suite.server.url}/`);
    const again = other.locator(`[data-testid="conversation-item"][data-conv-id="${convId}"] [data-testid="conv-label"]`);
    await again.and(other.locator('[data-kind="prompt"]')).waitFor({ timeout: 10_000 });
    expect(await again.textContent()).toBe(text);
  });

  it('should fold the event pane into a tab below 900 px instead of hiding it', async () => {
    const convId = newConvId('narrow');
    const page = suite.track(await newPage(suite.browser));
    await page.setViewportSize({ width: 800, height: 900 });
    await page.goto(`${suite.server.url}/#/c/${convId}`);
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    await finishedRun(page, 'echo hello');

    const log = page.getByTestId('event-log');
    const timeline = page.getByTestId('timeline');
    expect(await page.getByTestId('pane-tabs').isVisible()).toBe(true);
    expect(await timeline.isVisible()).toBe(true);
    expect(await log.isVisible()).toBe(false);
    const frames = await page.getByTestId('frame').count();
    expect(await page.getByTestId('tab-events-count').textContent()).toBe(String(frames));

    await page.getByTestId('tab-events').click();
    expect(await log.isVisible()).toBe(true);
    expect(await timeline.isVisible()).toBe(false);
    expect(await page.getByTestId('tab-events').getAttribute('aria-selected')).toBe('true');
    const box = await log.boundingBox();
    expect(box!.width).toBeGreaterThan(400);
    await frameRow(page, 'run.end').click();
    expect(await page.getByTestId('frame-detail').isVisible()).toBe(true);
    await page.screenshot({ path: 'test-results/dashboard-narrow-events.png' });

    await page.getByTestId('tab-transcript').click();
    expect(await timeline.isVisible()).toBe(true);
    expect(await log.isVisible()).toBe(false);
    // Wide again: both panes side by side, whichever tab was picked last.
    await page.getByTestId('tab-events').click();
    await page.setViewportSize({ width: 1440, height: 900 });
    expect(await timeline.isVisible()).toBe(true);
    expect(await log.isVisible()).toBe(true);
    expect(await page.getByTestId('pane-tabs').isVisible()).toBe(false);
  });
});
