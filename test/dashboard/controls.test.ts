import type { Browser, Page } from 'playwright-core';
import { enableStepMode, errorsOf, launchBrowser, newPage, openPause, sendPrompt } from './helpers/browser.js';
import { startServer, type RunningServer } from './helpers/server.js';

const TOKEN = 'alice-secret-token';
const SCRIPT = {
  responses: [{ text: 'Checking.', tool_calls: [{ id: 'call_echo', name: 'echo', arguments: { message: 'hi' } }] }, { text: 'Done here.' }],
};

let server: RunningServer;
let browser: Browser;
let pages: Page[] = [];

beforeAll(async () => {
  [server, browser] = await Promise.all([startServer({ script: SCRIPT, authTokens: `alice:${TOKEN},bob:bob-token` }), launchBrowser()]);
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

afterEach(async () => {
  for (const page of pages) {
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  }
  pages = [];
});

/** A page with alice's token entered in the token field. */
async function signedIn(hash = ''): Promise<Page> {
  const page = await newPage(browser);
  pages.push(page);
  await page.goto(`${server.url}/${hash}`);
  await page.getByTestId('token-input').fill(TOKEN);
  await page.getByTestId('token-save').click();
  return page;
}

async function newConversation(page: Page): Promise<string> {
  await page.getByTestId('new-conversation').click();
  await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
  return page.evaluate(() => (window as unknown as { __stepwise: { convId: string } }).__stepwise.convId);
}

describe('dashboard: auth, conversations and run controls', () => {
  it('should ask for a token, then use it on HTTP and the WebSocket, keeping it for the tab', async () => {
    const page = await newPage(browser);
    pages.push(page);
    await page.goto(server.url);
    // The static page loads without auth; the API says 401 and the page says why.
    await page.getByTestId('error-banner').waitFor();
    expect(await page.getByTestId('error-banner').getAttribute('data-code')).toBe('unauthorized');

    await page.getByTestId('token-input').fill(TOKEN);
    await page.getByTestId('token-save').click();
    const convId = await newConversation(page);
    await sendPrompt(page, 'with a token');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('stepwise.token'))).toBe(TOKEN);

    // A reload keeps the token (same tab) and replays the conversation.
    await page.reload();
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    expect(await page.getByTestId('token-input').inputValue()).toBe(TOKEN);
    // The conversation is alice's: bob may not see it.
    expect((await server.api('GET', `/conversations/${convId}`, undefined, 'bob-token')).status).toBe(403);
  });

  it('should list conversations and open one picked from the list with its transcript', async () => {
    const first = await signedIn();
    const convId = await newConversation(first);
    await sendPrompt(first, 'remember me');
    await first.locator('[data-testid="run"][data-status="completed"]').waitFor();

    const second = await signedIn();
    const item = second.locator(`[data-testid="conversation-item"][data-conv-id="${convId}"]`);
    await item.waitFor();
    await item.click();
    await second.locator('[data-testid="run"][data-status="completed"]').waitFor();
    expect(second.url()).toContain(`#/c/${convId}`);
    await expect.poll(() => second.getByTestId('user-prompt').textContent()).toBe('remember me');
    expect(await second.locator('[data-testid="assistant-body"]').allTextContents()).toEqual(['Checking.', 'Done here.']);
  });

  it('should cancel a paused run: the card closes as cancelled and the run ends cancelled', async () => {
    const page = await signedIn();
    await newConversation(page);
    await enableStepMode(page);
    await sendPrompt(page, 'cancel me');
    await openPause(page, 'after_inference').waitFor();
    await page.getByTestId('cancel-run').click();
    await page.locator('[data-testid="pause-card"][data-state="resolved"][data-reason="cancelled"]').waitFor();
    await page.locator('[data-testid="run"][data-status="cancelled"]').waitFor();
    expect(await page.locator('[data-testid="tool-call"] [data-testid="tool-result"]').count()).toBe(0);
    await expect.poll(() => page.getByTestId('cancel-run').isDisabled()).toBe(true);
  });

  it('should release the pause when step mode is switched off, showing why', async () => {
    const page = await signedIn();
    await newConversation(page);
    await enableStepMode(page);
    await sendPrompt(page, 'let it go');
    await openPause(page, 'after_inference').waitFor();
    const disabled = page.waitForResponse((response) => response.url().endsWith('/debug/step/disable') && response.status() === 200);
    await page.getByTestId('step-toggle-label').click();
    await disabled;
    const card = page.locator('[data-testid="pause-card"][data-state="resolved"][data-reason="disabled"]');
    await card.waitFor();
    expect(await card.getByTestId('pause-resolution').textContent()).toContain('Step mode disabled');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    expect(await page.locator('[data-testid="pause-card"]').count()).toBe(1);
  });

  it('should apply a step mode chosen before the first prompt to the new conversation', async () => {
    const page = await signedIn();
    await page.getByTestId('step-toggle-label').click();
    const chat = page.waitForRequest((request) => request.url().endsWith('/chat'));
    await page.getByTestId('prompt-input').fill('pause me from the start');
    await page.getByTestId('send').click();
    expect((await chat).postDataJSON()).toMatchObject({ prompt: 'pause me from the start', overrides: { step_mode: true } });
    await openPause(page, 'after_inference').waitFor();
    expect(page.url()).toMatch(/#\/c\/c-/);
    expect(await page.getByTestId('step-toggle').isChecked()).toBe(true);
  });
});
