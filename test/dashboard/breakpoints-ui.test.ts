import { mkdir } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { enableStepMode, newConvId, newPage, openDashboard, openPause, recordRequests, sendPrompt } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

// docs/protocol.md, Breakpoints and result edits, from the page: per-tool breakpoints, edited results at after_tools,
// the `breakpoint` mark. The page's requests are checked exactly, and the server's answer to them end to end.
const SCRIPT = {
  responses: [{ text: 'Echoing.', tool_calls: [{ id: 'call_echo', name: 'echo', arguments: { message: 'hi' } }] }, { text: 'Done.' }],
};
const suite = useDashboardSuite({ script: SCRIPT });

const toolNames = (page: Page) => page.getByTestId('breakpoint-tool').evaluateAll((boxes) => boxes.map((box) => (box as HTMLElement).dataset.name));

describe('dashboard: breakpoints and result edits', () => {
  it('should list the server tools (GET /tools) and post step mode filtered to the chosen ones', async () => {
    const convId = newConvId('bp');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    await page.getByTestId('breakpoints-toggle').click();
    await expect.poll(() => toolNames(page)).toEqual(['add', 'echo']);
    const listed = (await suite.server.api('GET', '/tools')).body.tools;
    expect(listed.map((tool: { name: string; source: string }) => [tool.name, tool.source])).toEqual([['echo', 'tools-file'], ['add', 'tools-file']]);
    expect(await page.getByTestId('breakpoint-source').allTextContents()).toEqual(['tools-file', 'tools-file']);

    const sent = recordRequests(page, '/debug/step/enable');
    const answered = page.waitForResponse((response) => response.url().endsWith('/debug/step/enable'));
    await page.locator('[data-testid="breakpoint-tool"][data-name="echo"]').check();
    await page.getByTestId('breakpoints-apply').click();
    const reply = await answered;
    expect(sent.map((body) => JSON.parse(body))).toEqual([{ conv_id: convId, tools: ['echo'] }]);
    // The server takes the filter: step mode is on, pausing only for echo.
    expect(reply.status()).toBe(200);
    expect((await suite.server.api('GET', `/conversations/${convId}`)).body.step_filter).toEqual({ tools: ['echo'] });
    await expect.poll(() => page.getByTestId('step-toggle').isChecked()).toBe(true);
    expect(await page.getByTestId('breakpoint-status').textContent()).toBe('pausing on echo');
    await mkdir('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/dashboard-breakpoints.png' });
  });

  // GET /conversations/:id reports `step_filter`, and the page checks its tools.
  it('should show the conversation filter from the server after a reload', async () => {
    const convId = newConvId('bp-filter');
    // The page's WebSocket opens the conversation; the filter is then set from outside and read after a reload.
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    expect((await suite.server.api('POST', '/debug/step/enable', { conv_id: convId, tools: ['add'] })).status).toBe(200);
    await page.reload();
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    await page.getByTestId('breakpoints-toggle').click();
    await expect.poll(() => page.locator('[data-testid="breakpoint-tool"][data-name="add"]').isChecked()).toBe(true);
    expect((await suite.server.api('GET', `/conversations/${convId}`)).body.step_filter).toEqual({ tools: ['add'] });
  });

  it('should edit a tool result at after_tools and post it as results by tool_call_id', async () => {
    const convId = newConvId('results');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    await enableStepMode(page);
    await sendPrompt(page, 'echo hi');
    await openPause(page, 'after_inference').getByTestId('pause-continue').click();

    let card = openPause(page, 'after_tools');
    await card.waitFor({ timeout: 15_000 });
    // After a reload the pause comes from ws.hello before the replayed results: it still offers them.
    await page.reload();
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    card = openPause(page, 'after_tools');
    await card.getByTestId('pause-edit-results').waitFor();
    expect(await page.getByTestId('pause-card').and(page.locator('[data-phase="after_tools"]')).count()).toBe(1);
    expect(await card.getByTestId('pause-edit-results').getByTestId('shortcut-hint').textContent()).toBe('e');
    const decisions = recordRequests(page, '/debug/continue');
    await card.focus();
    await page.keyboard.press('e');
    expect(await card.getAttribute('data-mode')).toBe('results');
    const editor = card.locator('[data-testid="edit-result"][data-tool-call-id="call_echo"]');
    expect(JSON.parse(await editor.inputValue())).toEqual({ echoed: 'hi' });
    expect(await editor.evaluate((node) => node === document.activeElement)).toBe(true);

    // Not JSON: refused on the page, nothing sent.
    await editor.fill('{"echoed": ');
    await card.getByTestId('results-submit').click();
    expect(await card.getByTestId('edit-result-error').isVisible()).toBe(true);
    expect(decisions).toHaveLength(0);

    await editor.fill('{"echoed": "HI, edited"}');
    const pauseId = await card.getAttribute('data-pause-id');
    await card.screenshot({ path: 'test-results/dashboard-edit-results.png' });
    const answered = page.waitForResponse((response) => response.url().endsWith('/debug/continue'));
    await card.getByTestId('results-submit').click();
    expect((await answered).status()).toBe(200);
    expect(JSON.parse(decisions[0]!)).toEqual({ pause_id: pauseId, conv_id: convId, action: 'edit', results: { call_echo: { echoed: 'HI, edited' } } });
    await page.locator(`[data-testid="pause-card"][data-pause-id="${pauseId}"][data-state="resolved"][data-reason="edited"]`).waitFor();
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor({ timeout: 15_000 });
  });

  // The server accepts `results` at after_tools and keeps what the tool really returned.
  it('should resolve the after_tools pause as edited and keep the original result', async () => {
    const convId = newConvId('results-e2e');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    await enableStepMode(page);
    await sendPrompt(page, 'echo hi');
    await openPause(page, 'after_inference').getByTestId('pause-continue').click();
    const card = openPause(page, 'after_tools');
    await card.waitFor({ timeout: 15_000 });
    const pauseId = await card.getAttribute('data-pause-id');
    await card.getByTestId('pause-edit-results').click();
    await card.locator('[data-testid="edit-result"][data-tool-call-id="call_echo"]').fill('{"echoed": "HI"}');
    await card.getByTestId('results-submit').click();
    await page.locator(`[data-testid="pause-card"][data-pause-id="${pauseId}"][data-state="resolved"][data-reason="edited"]`).waitFor();
    const conv = await suite.server.api('GET', `/conversations/${convId}`);
    const used = conv.body.turns[0].blocks.find((block: { kind: string }) => block.kind === 'tool_use');
    expect(used.payload.result).toEqual({ echoed: 'HI' });
  });

  it('should mark pause calls that carry breakpoint: true', async () => {
    const convId = newConvId('bp-mark');
    const page = suite.track(await newPage(suite.browser));
    // The suite's tools ask for no pause themselves (that would change every other test's run), so the real frame is
    // marked in flight as docs/protocol.md, The pause object says the server sends it;
    // test/server/breakpoints.test.ts checks the server's mark.
    await page.routeWebSocket(/\/ws\?/, (ws) => {
      const server = ws.connectToServer();
      server.onMessage((message) => {
        const frame = JSON.parse(String(message));
        for (const toolCall of frame.event?.type === 'debugger.pause' ? frame.event.extra?.tool_calls ?? [] : []) toolCall.breakpoint = true;
        ws.send(JSON.stringify(frame));
      });
    });
    await page.goto(`${suite.server.url}/#/c/${convId}`);
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    await enableStepMode(page);
    await sendPrompt(page, 'echo hi');
    const card = openPause(page, 'after_inference');
    await card.waitFor({ timeout: 15_000 });
    const mark = card.locator('[data-testid="pause-call"][data-tool-call-id="call_echo"] [data-testid="breakpoint-mark"]');
    expect(await mark.textContent()).toBe('breakpoint');
    expect(await mark.isVisible()).toBe(true);
    await card.screenshot({ path: 'test-results/dashboard-breakpoint-mark.png' });
    await suite.server.api('POST', '/chat/cancel', { conv_id: convId });
  });
});
