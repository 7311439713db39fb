import { mkdir } from 'node:fs/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { newConvId, openDashboard, openPause, recordRequests, sendPrompt } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

// Issue 12 item 4 and issue 13 from the page: each inference's "what was sent" (checked against
// GET /conversations/:id/inferences/:message_id), and the Breakpoints menu over GET /tools, with a real
// MCP server over stdio next to the tools file (and its tools gone from the menu once it dies).
const MCP_SERVER = fileURLToPath(new URL('../fixtures/mcp/tools-server.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'stepwise-dash-sent-'));
const MCP_FILE = join(dir, 'mcp.json');
writeFileSync(MCP_FILE, JSON.stringify({ mcpServers: { fixture: { command: process.execPath, args: [MCP_SERVER] } } }));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Every conversation plays it from the start: a run with an MCP call, then one that kills the MCP server.
const SCRIPT = {
  responses: [
    { text: 'Looking it up.', tool_calls: [{ id: 'call_lookup', name: 'lookup', arguments: { key: 'abc' } }] },
    { text: 'It is ABC.' },
    { tool_calls: [{ id: 'call_crash', name: 'crash', arguments: {} }] },
    { text: 'The server is gone.' },
  ],
};
const suite = useDashboardSuite({ script: SCRIPT, extraArgs: ['--mcp', MCP_FILE] });

const texts = (locator: ReturnType<Page['getByTestId']>) => locator.evaluateAll((nodes) => nodes.map((node) => node.textContent));
const data = (locator: ReturnType<Page['getByTestId']>, key: string) => locator.evaluateAll((nodes, name) => nodes.map((node) => (node as HTMLElement).dataset[name]), key);

async function finishedRun(page: Page, prompt: string, runs = 1): Promise<void> {
  await sendPrompt(page, prompt);
  await expect.poll(() => page.locator('[data-testid="run"][data-status="completed"]').count(), { timeout: 15_000 }).toBe(runs);
}

/** The route's answer for one inference, as the server gives it to anyone. */
async function sentOf(convId: string, messageId: string): Promise<any> {
  const reply = await suite.server.api('GET', `/conversations/${convId}/inferences/${encodeURIComponent(messageId)}`);
  expect(reply.status).toBe(200);
  return reply.body;
}

describe('dashboard: what each inference sent, and breakpoints over the server tools', () => {
  it('should show the transcript and tool specs each inference sent, as the server recorded them', async () => {
    const convId = newConvId('sent');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    await finishedRun(page, 'look abc up');
    const views = page.getByTestId('inference-request');
    expect(await views.count()).toBe(2);
    // Next to what came back, under the same message.
    expect(await page.getByTestId('inference-reply').count()).toBe(2);
    const ids = (await data(views, 'messageId')) as string[];
    const finals = await suite.server.api('GET', `/hydrate?conv_id=${convId}`);
    expect(ids).toEqual(finals.body.frames.filter((frame: any) => frame.event.type === 'llm.final').map((frame: any) => frame.event.id));

    for (const [index, messageId] of ids.entries()) {
      const view = views.nth(index);
      const fetched = page.waitForResponse((response) => response.url().includes('/inferences/'));
      await view.locator('summary').click();
      expect((await fetched).status()).toBe(200);
      await view.locator('[data-testid="sent-body"][data-state="loaded"]').waitFor();
      const sent = await sentOf(convId, messageId);
      expect(await data(view.getByTestId('sent-message'), 'blockId')).toEqual(sent.messages.map((block: any) => block.id));
      expect(await data(view.getByTestId('sent-message'), 'kind')).toEqual(sent.messages.map((block: any) => block.kind));
      expect(await data(view.getByTestId('sent-tool'), 'name')).toEqual(sent.tools.map((tool: any) => tool.name));
      expect((await texts(view.getByTestId('sent-tool-parameters'))).map((text) => JSON.parse(text as string))).toEqual(sent.tools.map((tool: any) => tool.parameters));
      expect(await view.getByTestId('sent-summary').textContent()).toBe(`${sent.messages.length} message${sent.messages.length === 1 ? '' : 's'} · ${sent.tools.length} tools offered`);
    }
    // The first inference got the prompt; the second the first's answer and the MCP tool's result too.
    const first = await sentOf(convId, ids[0] as string);
    expect(first.messages.map((block: any) => block.kind)).toEqual(['user']);
    expect(await views.first().getByTestId('sent-message-content').first().textContent()).toBe('look abc up');
    const second = views.nth(1);
    expect(await data(second.getByTestId('sent-message'), 'kind')).toEqual(['user', 'llm_text', 'tool_call', 'tool_use']);
    expect(JSON.parse((await second.getByTestId('sent-message-content').last().textContent()) as string)).toEqual({ key: 'abc', value: 'ABC' });
    // Every tool the server offers, MCP's with the input schema its server gave.
    const lookup = second.locator('[data-testid="sent-tool"][data-name="lookup"]');
    expect(JSON.parse((await lookup.getByTestId('sent-tool-parameters').textContent()) as string)).toMatchObject({ type: 'object', properties: { key: { type: 'string' } } });
    await mkdir('test-results', { recursive: true });
    await second.screenshot({ path: 'test-results/dashboard-inference-sent.png' });

    // A message the server does not know: the view says what the server answered.
    const unknown = await suite.server.api('GET', `/conversations/${convId}/inferences/${encodeURIComponent('inf_nope:1')}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('unknown_inference');
  });

  it('should list the server tools from GET /tools with their source, and pause on the MCP tool chosen there', async () => {
    const convId = newConvId('bp-tools');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    const tools = (await suite.server.api('GET', '/tools')).body.tools as { name: string; source: string }[];
    expect(tools.map((tool) => [tool.name, tool.source])).toEqual([
      ['echo', 'tools-file'],
      ['add', 'tools-file'],
      ['lookup', 'mcp:fixture'],
      ['fail', 'mcp:fixture'],
      ['wait', 'mcp:fixture'],
      ['crash', 'mcp:fixture'],
    ]);
    await page.getByTestId('breakpoints-toggle').click();
    await page.locator('[data-testid="breakpoints"][data-state="loaded"]').waitFor();
    const boxes = page.getByTestId('breakpoint-tool');
    const byName = (list: { name: string; source: string }[]) => [...list].sort((a, b) => a.name.localeCompare(b.name)).map((tool) => [tool.name, tool.source]);
    const shown = (await boxes.evaluateAll((nodes) => nodes.map((node) => ({ name: (node as HTMLElement).dataset.name ?? '', source: (node as HTMLElement).dataset.source ?? '' })))) as { name: string; source: string }[];
    expect(shown.map((tool) => [tool.name, tool.source])).toEqual(byName(tools));
    expect(await page.locator('[data-testid="breakpoint-tool"][data-name="lookup"] ~ [data-testid="breakpoint-source"]').textContent()).toBe('mcp:fixture');

    const sent = recordRequests(page, '/debug/step/enable');
    await page.locator('[data-testid="breakpoint-tool"][data-name="lookup"]').check();
    const accepted = page.waitForResponse((response) => response.url().endsWith('/debug/step/enable'));
    await page.getByTestId('breakpoints-apply').click();
    expect((await accepted).status()).toBe(200);
    expect(sent.map((body) => JSON.parse(body))).toEqual([{ conv_id: convId, tools: ['lookup'] }]);
    await sendPrompt(page, 'look abc up');
    const card = openPause(page, 'after_inference');
    await card.waitFor({ timeout: 15_000 });
    expect(await card.getAttribute('data-pause-id')).toBe((await suite.server.api('GET', `/debug/pauses?conv_id=${convId}`)).body.pauses[0].pause_id);
    expect((await suite.server.api('GET', `/debug/pauses?conv_id=${convId}`)).body.pauses[0].tool_calls).toEqual([{ id: 'call_lookup', name: 'lookup', input: { key: 'abc' } }]);
    await card.getByTestId('pause-continue').click();
    await openPause(page, 'after_tools').getByTestId('pause-continue').click();
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor({ timeout: 15_000 });
  });

  // Last: the MCP server dies here, for the whole server.
  it('should drop a dead MCP server tools from the menu, keeping a filter that names one', async () => {
    const convId = newConvId('bp-dead');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    await finishedRun(page, 'look abc up');
    await finishedRun(page, 'crash it', 2);
    expect((await suite.server.api('GET', '/tools')).body.tools.map((tool: any) => tool.name)).toEqual(['echo', 'add']);
    expect((await suite.server.api('POST', '/debug/step/enable', { conv_id: convId, tools: ['lookup'] })).status).toBe(200);
    await page.reload();
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    await page.getByTestId('breakpoints-toggle').click();
    await page.locator('[data-testid="breakpoints"][data-state="loaded"]').waitFor();
    await expect.poll(() => data(page.getByTestId('breakpoint-tool'), 'name')).toEqual(['add', 'echo', 'lookup']);
    const lookup = page.locator('[data-testid="breakpoint-tool"][data-name="lookup"]');
    expect(await lookup.isChecked()).toBe(true);
    expect(await page.locator('[data-testid="breakpoint-tool"][data-name="lookup"] ~ [data-testid="breakpoint-source"]').textContent()).toBe('no longer offered');
    await page.getByTestId('breakpoints').screenshot({ path: 'test-results/dashboard-breakpoints-tools.png' });
  });
});
