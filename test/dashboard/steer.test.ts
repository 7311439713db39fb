import type { Browser, Page } from 'playwright-core';
import { enableStepMode, errorsOf, launchBrowser, newConvId, openDashboard, openPause, sendPrompt, recordDecisions, isDecisionUrl } from './helpers/browser.js';
import { startServer, type RunningServer } from './helpers/server.js';

const SCRIPT = {
  responses: [
    {
      text: 'Calling tools.',
      tool_calls: [
        { id: 'call_echo', name: 'echo', arguments: { message: 'hello' } },
        { id: 'call_add', name: 'add', arguments: { a: 1, b: 2 } },
      ],
    },
    { text: 'Finished.' },
  ],
};

let server: RunningServer;
let browser: Browser;
let page: Page | undefined;

beforeAll(async () => {
  [server, browser] = await Promise.all([startServer({ script: SCRIPT }), launchBrowser()]);
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

afterEach(async () => {
  if (page) expect(errorsOf(page)).toEqual([]);
  await page?.close();
  page = undefined;
});

async function pausedRun(label: string): Promise<{ convId: string; page: Page }> {
  const convId = newConvId(label);
  const opened = await openDashboard(browser, server.url, convId);
  await enableStepMode(opened);
  await sendPrompt(opened, `steer ${label}`);
  await openPause(opened, 'after_inference').waitFor();
  return { convId, page: opened };
}

async function finishRun(current: Page): Promise<void> {
  const afterTools = openPause(current, 'after_tools');
  await afterTools.waitFor();
  await afterTools.getByTestId('pause-continue').click();
  await current.locator('[data-testid="run"][data-status="completed"]').waitFor();
}

/** The tool_use blocks of the conversation's history: what the model sees on its next inference. */
async function toolUses(convId: string): Promise<Partial<Record<string, { result: unknown; error?: string }>>> {
  const { body } = await server.api('GET', `/conversations/${convId}`);
  const uses: Record<string, { result: unknown; error?: string }> = {};
  for (const turn of body.turns) for (const block of turn.blocks) if (block.kind === 'tool_use') uses[block.payload.id] = block.payload;
  return uses;
}

describe('dashboard: steering a pause', () => {
  it('should deny a chosen call with a reason the model sees, and run the others', async () => {
    const run = await pausedRun('deny');
    page = run.page;
    const sent = recordDecisions(page);
    const card = openPause(page, 'after_inference');
    await card.getByTestId('pause-deny').click();
    await card.locator('[data-tool-call-id="call_add"] [data-testid="deny-select"]').uncheck();
    await card.getByTestId('deny-reason').fill('not on a Friday');
    await card.getByTestId('deny-submit').click();

    await page.locator('[data-testid="pause-card"][data-state="resolved"][data-reason="denied"]').waitFor();
    expect(JSON.parse(sent[0] ?? 'null')).toMatchObject({ action: 'deny', reason: 'not on a Friday', tool_call_ids: ['call_echo'] });
    const echo = page.locator('[data-testid="tool-call"][data-tool-call-id="call_echo"]');
    await expect.poll(() => echo.getByTestId('tool-error').textContent()).toContain('denied by operator: not on a Friday');
    await expect.poll(() => page!.locator('[data-tool-call-id="call_add"] [data-testid="tool-result"]').textContent()).toContain('3');
    await finishRun(page);

    const uses = await toolUses(run.convId);
    expect(uses.call_echo?.error).toContain('not on a Friday');
    expect(uses.call_add?.error).toBeUndefined();
  });

  it('should refuse invalid JSON in the page and send nothing', async () => {
    const run = await pausedRun('badjson');
    page = run.page;
    const sent = recordDecisions(page);
    const card = openPause(page, 'after_inference');
    await card.getByTestId('pause-edit').click();
    await card.locator('[data-tool-call-id="call_add"] [data-testid="edit-args"]').fill('{"a": 20, ');
    await card.getByTestId('edit-submit').click();

    const editError = card.locator('[data-tool-call-id="call_add"] [data-testid="edit-error"]');
    await editError.waitFor();
    expect(await editError.textContent()).toContain('Invalid JSON');
    expect(await card.getByTestId('pause-error').textContent()).toContain('nothing was sent');
    // Arrays are JSON too, but not arguments.
    await card.locator('[data-tool-call-id="call_add"] [data-testid="edit-args"]').fill('[1, 2]');
    await card.getByTestId('edit-submit').click();
    await expect.poll(() => editError.textContent()).toContain('must be a JSON object');

    expect(sent).toEqual([]);
    expect(await card.getAttribute('data-state')).toBe('open');
    const { body } = await server.api('GET', `/debug/pauses?conv_id=${run.convId}`);
    expect(body.pauses).toHaveLength(1);
  });

  it('should show the server rejecting schema-invalid args inline, keep the card, then run a valid edit', async () => {
    const run = await pausedRun('edit');
    page = run.page;
    const card = openPause(page, 'after_inference');
    const editor = card.locator('[data-tool-call-id="call_add"] [data-testid="edit-args"]');
    await card.getByTestId('pause-edit').click();
    await editor.fill('{"a": "twenty", "b": 22}');
    const rejected = page.waitForResponse((response) => isDecisionUrl(response.url()));
    await card.getByTestId('edit-submit').click();
    expect((await rejected).status()).toBe(400);
    await expect.poll(() => card.getByTestId('pause-error').isVisible()).toBe(true);
    expect((await card.getByTestId('pause-error').textContent())?.length).toBeGreaterThan(0);
    // The server names the offending call; its issues show under that call's editor.
    expect(await card.locator('[data-tool-call-id="call_add"] [data-testid="edit-error"]').isVisible()).toBe(true);
    expect(await card.locator('[data-tool-call-id="call_echo"] [data-testid="edit-error"]').isVisible()).toBe(false);
    expect(await card.getAttribute('data-state')).toBe('open');

    await editor.fill('{"a": 20, "b": 22}');
    await card.getByTestId('edit-submit').click();
    await page.locator('[data-testid="pause-card"][data-state="resolved"][data-reason="edited"]').waitFor();

    // The transcript shows what the model asked for and what actually ran.
    const add = page.locator('[data-testid="tool-call"][data-tool-call-id="call_add"]');
    expect(await add.getByTestId('tool-args').textContent()).toContain('"a": 1');
    await expect.poll(() => add.getByTestId('tool-exec-args').textContent()).toContain('"a": 20');
    await expect.poll(() => add.getByTestId('tool-result').textContent()).toContain('42');
    await finishRun(page);

    const uses = await toolUses(run.convId);
    expect(uses.call_add?.result).toEqual({ sum: 42 });
  });
});
