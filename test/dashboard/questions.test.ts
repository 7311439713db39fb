import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newConvId, newPage, openDashboard, openPause, sendPrompt, recordDecisions, isDecisionUrl } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

// docs/protocol.md, Questions for a human, from the page: the pause card renders a form from the answer schema, a
// refused answer shows the server's issues and the pause waits, an accepted one resumes the run as `answered`.
const SCRIPT = {
  responses: [
    { text: 'Asking.', tool_calls: [{ id: 'call_q', name: 'ask_booking', arguments: { question: 'Where to?' } }] },
    { tool_calls: [{ id: 'call_t', name: 'ask_tags', arguments: {} }] },
    { text: 'Booked.' },
  ],
};
const toolsFile = join(resolve(fileURLToPath(new URL('.', import.meta.url))), 'fixtures/question-tools.mjs');
const suite = useDashboardSuite({ script: SCRIPT, toolsFile });

describe('dashboard: questions for a human', () => {
  it('should answer a question with a form built from its schema, show a refusal and keep the pause, then resume answered', async () => {
    const convId = newConvId('question');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    const decisions = recordDecisions(page);
    // Step mode stays off: a question pauses anyway.
    await sendPrompt(page, 'book me a room');
    const card = openPause(page, 'after_inference');
    await card.waitFor({ timeout: 15_000 });
    expect(await card.getByTestId('question-mark').textContent()).toBe('question');
    const form = card.locator('[data-testid="answer-form"][data-tool-call-id="call_q"]');
    const field = (name: string) => form.locator(`[data-testid="answer-field"][data-field="${name}"]`);
    expect(await form.getByTestId('answer-field').evaluateAll((nodes) => nodes.map((node) => `${node.tagName.toLowerCase()}:${(node as HTMLInputElement).type}`))).toEqual([
      'input:text',
      'input:number',
      'select:select-one',
      'input:checkbox',
    ]);

    await field('city').fill('Lyon');
    await field('nights').fill('0');
    await field('room').selectOption('double');
    await field('breakfast').check();
    await mkdir('test-results', { recursive: true });
    await card.screenshot({ path: 'test-results/dashboard-question.png' });
    const refused = page.waitForResponse((response) => isDecisionUrl(response.url()));
    await card.getByTestId('pause-answer').click();
    expect((await refused).status()).toBe(400);
    await form.getByTestId('answer-error').waitFor();
    expect(await form.getByTestId('answer-error').textContent()).toMatch(/nights/);
    expect(await card.getAttribute('data-state')).toBe('open');
    const pauseId = await card.getAttribute('data-pause-id');
    expect((await suite.server.api('GET', `/debug/pauses?conv_id=${convId}`)).body.pauses.map((pause: { pause_id: string }) => pause.pause_id)).toEqual([pauseId]);

    await field('nights').fill('2');
    await card.getByTestId('pause-answer').click();
    const answer = { city: 'Lyon', nights: 2, room: 'double', breakfast: true };
    await page.locator(`[data-testid="pause-card"][data-pause-id="${pauseId}"][data-state="resolved"][data-reason="answered"]`).waitFor();
    expect(decisions.map((body) => JSON.parse(body))).toEqual([
      { pause_id: pauseId, conv_id: convId, action: 'answer', answers: { call_q: { ...answer, nights: 0 } } },
      { pause_id: pauseId, conv_id: convId, action: 'answer', answers: { call_q: answer } },
    ]);
    await page.locator(`[data-testid="pause-card"][data-pause-id="${pauseId}"] [data-testid="decision-answer"]`).waitFor();

    // The second question's answer is an array: a JSON box, sent with the `a` key.
    const tags = openPause(page, 'after_inference');
    await tags.getByTestId('answer-json').waitFor({ timeout: 15_000 });
    await tags.getByTestId('answer-json').fill('["quiet", "view"]');
    await tags.focus();
    await page.keyboard.press('a');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor({ timeout: 15_000 });
    const { turns } = (await suite.server.api('GET', `/conversations/${convId}`)).body;
    const results = turns[0].blocks.filter((block: { kind: string }) => block.kind === 'tool_use').map((block: { payload: unknown }) => block.payload);
    expect(results).toEqual([
      { id: 'call_q', result: answer },
      { id: 'call_t', result: ['quiet', 'view'] },
    ]);
  });
});

describe('dashboard: a question in the inbox', () => {
  it('should open the answer form with a, show a refusal under it, and send the answer with Ctrl+Enter', async () => {
    const convId = newConvId('inbox-question');
    const page = suite.track(await newPage(suite.browser));
    await page.goto(`${suite.server.url}/inbox.html`);
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    expect((await suite.server.api('POST', '/chat', { prompt: 'book', conv_id: convId })).status).toBe(200);
    await page.locator(`[data-testid="inbox-row"][data-conv-id="${convId}"]`).waitFor();
    // By pause id: once answered, the run asks its next question in a row of its own.
    const pauseId = await page.locator(`[data-testid="inbox-row"][data-conv-id="${convId}"]`).getAttribute('data-pause-id');
    const row = page.locator(`[data-testid="inbox-row"][data-pause-id="${pauseId}"]`);
    expect(await row.getByTestId('inbox-kind').textContent()).toBe('question');
    // The only waiting pause on this server: it is the selected row.
    expect(await row.getAttribute('data-selected')).toBe('true');
    await page.keyboard.press('a');
    const field = (name: string) => row.locator(`[data-testid="answer-field"][data-field="${name}"]`);
    expect(await field('city').evaluate((node) => node === document.activeElement)).toBe(true);
    await page.keyboard.type('Nice');
    await field('nights').fill('-1');
    await field('room').selectOption('single');
    await field('nights').focus();
    const refused = page.waitForResponse((response) => isDecisionUrl(response.url()));
    await page.keyboard.press('Control+Enter');
    expect((await refused).status()).toBe(400);
    await row.getByTestId('answer-error').waitFor();
    expect(await page.getByTestId('error-banner').isVisible()).toBe(true);
    expect(await row.isVisible()).toBe(true);

    await field('nights').fill('3');
    await page.keyboard.press('Control+Enter');
    await row.waitFor({ state: 'detached', timeout: 15_000 });
    const { decisions } = (await suite.server.api('GET', `/conversations/${convId}/decisions`)).body;
    expect(decisions[0]).toMatchObject({ reason: 'answered', answers: { call_q: { city: 'Nice', nights: 3, room: 'single', breakfast: false } } });
    await suite.server.api('POST', '/chat/cancel', { conv_id: convId });
  });
});
