import type { Browser, Page } from 'playwright-core';
import { createScriptedEngine } from '../../src/engines/scripted.js';
import { startTestServer, type TestServer } from '../helpers/server-harness.js';
import { errorsOf, launchBrowser, newConvId, newPage, openDashboard } from './helpers/browser.js';

// The server is built in-process with createServer (the real HTTP and WebSocket server, on port 0)
// because profiles are Engine objects here: the support profile answers from its own script.
const SUPPORT = 'Support here: how can I help?';
const DEFAULT = 'The server default answered.';

let server: TestServer;
let bare: TestServer;
let browser: Browser;
const pages: Page[] = [];

beforeAll(async () => {
  const supportEngine = createScriptedEngine({ responses: [{ text: SUPPORT }, { text: SUPPORT }] });
  [server, bare, browser] = await Promise.all([
    startTestServer({
      script: { responses: [{ text: DEFAULT }, { text: DEFAULT }] },
      profiles: [
        { slug: 'support', description: 'Customer support', tools: ['echo'], engine: supportEngine },
        { slug: 'math', description: 'Sums only', tools: ['add'] },
      ],
    }),
    startTestServer({ script: { responses: [{ text: DEFAULT }] } }),
    launchBrowser(),
  ]);
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([server?.close(), bare?.close()]);
});

afterEach(async () => {
  for (const page of pages.splice(0)) {
    expect(errorsOf(page)).toEqual([]);
    await page.close();
  }
});

async function open(base: string, convId: string): Promise<Page> {
  const page = await openDashboard(browser, base, convId);
  pages.push(page);
  return page;
}

/** Sends a prompt with the composer and returns the path the page posted it to. */
async function send(page: Page, prompt: string): Promise<string> {
  const replied = page.waitForResponse((response) => new URL(response.url()).pathname.startsWith('/chat') && response.request().method() === 'POST');
  await page.getByTestId('prompt-input').fill(prompt);
  await page.getByTestId('send').click();
  const response = await replied;
  expect(response.status()).toBe(200);
  return new URL(response.url()).pathname;
}

const finalText = (page: Page) =>
  page.locator('[data-testid="assistant-text"][data-state="final"] [data-testid="assistant-body"]').last().textContent();

const conversation = async (base: string, convId: string) => (await fetch(`${base}/conversations/${convId}`)).json();

describe('dashboard: the profile picker', () => {
  it('should list the profiles and start a new conversation with the one picked, then lock it', async () => {
    const convId = newConvId('profile');
    const page = await open(server.base, convId);
    const picker = page.getByTestId('profile-picker');
    await expect.poll(() => page.getByTestId('profile-picker-label').isVisible()).toBe(true);
    expect(await picker.locator('option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))).toEqual(['', 'support', 'math']);
    await picker.selectOption('support');

    expect(await send(page, 'I need help')).toBe('/chat/support');
    await expect.poll(() => finalText(page)).toBe(SUPPORT);
    expect(await conversation(server.base, convId)).toMatchObject({ profile: 'support' });
    // The conversation keeps its profile: the picker shows it and cannot change it.
    expect(await picker.isDisabled()).toBe(true);
    expect(await picker.inputValue()).toBe('support');
    // The sidebar shows the profile it was started with.
    const item = page.locator(`[data-testid="conversation-item"][data-conv-id="${convId}"]`);
    await expect.poll(() => item.getByTestId('conv-profile').textContent()).toBe('support');

    // A second prompt in the same conversation goes to plain /chat and still runs on the profile.
    expect(await send(page, 'more please')).toBe('/chat');
    await expect.poll(() => page.locator('[data-testid="assistant-text"][data-state="final"]').count()).toBe(2);
    expect(await finalText(page)).toBe(SUPPORT);
  });

  it('should keep the choice for the next new conversation, and send to /chat with the server default', async () => {
    const page = await open(server.base, newConvId('keep'));
    const picker = page.getByTestId('profile-picker');
    await expect.poll(() => page.getByTestId('profile-picker-label').isVisible()).toBe(true);
    await picker.selectOption('math');
    await page.getByTestId('new-conversation').click();
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    expect(await picker.inputValue()).toBe('math');
    expect(await picker.isDisabled()).toBe(false);

    await picker.selectOption('');
    expect(await send(page, 'hello')).toBe('/chat');
    await expect.poll(() => finalText(page)).toBe(DEFAULT);
    const convId = await page.evaluate(() => (window as unknown as { __stepwise: { convId: string } }).__stepwise.convId);
    expect(await conversation(server.base, convId)).toMatchObject({ profile: null });
    await expect.poll(() => picker.isDisabled()).toBe(true);
  });

  it("should show an existing conversation's profile, locked, when it is opened", async () => {
    const convId = newConvId('existing');
    const started = await fetch(`${server.base}/chat/math`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'hi', conv_id: convId }),
    });
    expect(started.status).toBe(200);
    const page = await open(server.base, convId);
    const picker = page.getByTestId('profile-picker');
    await expect.poll(() => picker.inputValue()).toBe('math');
    await expect.poll(() => picker.isDisabled()).toBe(true);
  });

  it('should hide the picker when the server has no profiles, and send to /chat', async () => {
    const page = await newPage(browser);
    pages.push(page);
    // Hidden is also the state before the list arrives: wait for GET /profiles, asked for at load.
    const listed = page.waitForResponse((response) => response.url().endsWith('/profiles'));
    await page.goto(`${bare.base}/#/c/${newConvId('bare')}`);
    expect(await (await listed).json()).toEqual({ profiles: [] });
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    expect(await page.getByTestId('profile-picker-label').isHidden()).toBe(true);
    expect(await send(page, 'hello')).toBe('/chat');
    await expect.poll(() => finalText(page)).toBe(DEFAULT);
  });
});
