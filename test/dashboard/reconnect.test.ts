import type { Browser, Page } from 'playwright-core';
import { enableStepMode, errorsOf, launchBrowser, newConvId, openDashboard, sendPrompt, shownSeqs } from './helpers/browser.js';
import { startRelay, type Relay } from './helpers/proxy.js';
import { startServer, type RunningServer } from './helpers/server.js';

const LONG = Array.from({ length: 60 }, (_, i) => `word${i + 1}`).join(' ');
const SCRIPT = {
  chunk_delay_ms: 20,
  responses: [{ text: LONG, tool_calls: [{ id: 'call_echo', name: 'echo', arguments: { message: 'again' } }] }, { text: 'Finished while you were away.' }],
};

let server: RunningServer;
let restarted: RunningServer | undefined;
let relay: Relay;
let browser: Browser;
let page: Page | undefined;

beforeAll(async () => {
  relay = await startRelay();
  // The page's origin is the relay's; the server is told to accept it like its own.
  [server, browser] = await Promise.all([startServer({ script: SCRIPT, extraArgs: ['--allowed-origins', relay.url] }), launchBrowser()]);
  relay.setTarget(Number(new URL(server.url).port));
});

afterAll(async () => {
  await browser?.close();
  await relay?.close();
  await server?.stop();
  await restarted?.stop();
});

async function waitForServer<T>(read: () => Promise<T | undefined>): Promise<T> {
  let value: T | undefined;
  await expect.poll(async () => (value = await read()) !== undefined, { timeout: 10_000 }).toBe(true);
  return value as T;
}

async function continueOnServer(convId: string, phase: string): Promise<void> {
  const pause = await waitForServer(async () => {
    const { body } = await server.api('GET', `/debug/pauses?conv_id=${convId}`);
    return body.pauses.find((candidate: { phase: string }) => candidate.phase === phase);
  });
  const { status } = await server.api('POST', '/debug/continue', { pause_id: pause.pause_id, conv_id: convId, action: 'continue' });
  expect(status).toBe(200);
}

describe('dashboard: a dropped connection', () => {
  it('should resume with since_seq and show every frame exactly once', async () => {
    const convId = newConvId('drop');
    page = await openDashboard(browser, relay.url, convId);
    await enableStepMode(page);
    await sendPrompt(page, 'stream a lot');

    // Cut the connection mid-stream and keep the server unreachable while the run goes on.
    await expect.poll(() => page!.locator('[data-testid="frame"][data-type="llm.delta"]').count()).toBeGreaterThanOrEqual(8);
    relay.block();
    relay.dropAll();
    await page.locator('[data-testid="conn-status"][data-state="reconnecting"]').waitFor();

    // Another operator (this test, straight to the server) steers the run to its end meanwhile.
    await continueOnServer(convId, 'after_inference');
    await continueOnServer(convId, 'after_tools');
    await waitForServer(async () => ((await server.api('GET', `/conversations/${convId}`)).body.running ? undefined : true));
    const seenBeforeResume = await shownSeqs(page);

    relay.unblock();
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor({ timeout: 15_000 });
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();

    const { body: hydrated } = await server.api('GET', `/hydrate?conv_id=${convId}&since_seq=0`);
    const expected = hydrated.frames.map((frame: { seq?: number; event?: { seq: number } }) => frame.seq ?? frame.event?.seq);
    expect(expected.at(-1)).toBe(hydrated.last_seq);
    await expect.poll(() => shownSeqs(page!)).toEqual(expected);
    expect(expected).toEqual(Array.from({ length: hydrated.last_seq }, (_, i) => i + 1));
    // The drop really lost frames that only the resume could bring back.
    expect(seenBeforeResume.length).toBeLessThan(expected.length);
    expect(await page.evaluate(() => (window as unknown as { __stepwise: { lastSeq: number } }).__stepwise.lastSeq)).toBe(hydrated.last_seq);

    expect(await page.locator('[data-testid="frame-marker"]').allTextContents()).toEqual([expect.stringContaining('connection lost'), expect.stringContaining(`resumed after seq ${seenBeforeResume.at(-1)}`)]);
    const bodies = await page.locator('[data-testid="assistant-body"]').allTextContents();
    expect(bodies).toEqual([LONG, 'Finished while you were away.']);
    const cards = page.locator('[data-testid="pause-card"]');
    expect(await cards.count()).toBe(2);
    expect(await cards.evaluateAll((nodes) => nodes.map((node) => (node as HTMLElement).dataset.reason))).toEqual(['continued', 'continued']);
    expect(await page.locator('[data-testid="tool-call"]').count()).toBe(1);
    expect(errorsOf(page)).toEqual([]);
  });

  it('should resume after the socket is closed from the page, dropping nothing', async () => {
    const convId = newConvId('hook');
    await page?.close();
    page = await openDashboard(browser, relay.url, convId);
    await sendPrompt(page, 'no step mode this time');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    const before = await shownSeqs(page);
    await page.evaluate(() => (window as unknown as { __stepwise: { dropSocket(): void } }).__stepwise.dropSocket());
    await page.locator('[data-testid="frame-marker"]').nth(1).waitFor();
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    expect(await shownSeqs(page)).toEqual(before);
  });

  it('should start over when the server restarted and lost its history, then show new frames', async () => {
    const convId = newConvId('restart');
    await page?.close();
    page = await openDashboard(browser, relay.url, convId);
    await sendPrompt(page, 'before the restart');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    expect((await shownSeqs(page)).length).toBeGreaterThan(5);

    await server.stop();
    restarted = await startServer({ script: SCRIPT, extraArgs: ['--allowed-origins', relay.url] });
    relay.setTarget(Number(new URL(restarted.url).port));
    // The new server starts seqs at 1 again; the page notices, clears and follows it.
    await page.locator('[data-testid="frame-marker"]', { hasText: 'server restarted' }).waitFor({ timeout: 15_000 });
    await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
    await expect.poll(() => page!.locator('[data-testid="run"]').count()).toBe(0);

    await sendPrompt(page, 'after the restart');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    const { body } = await restarted.api('GET', `/hydrate?conv_id=${convId}&since_seq=0`);
    await expect.poll(() => shownSeqs(page!)).toEqual(Array.from({ length: body.last_seq }, (_, i) => i + 1));
    expect(await page.getByTestId('user-prompt').allTextContents()).toEqual(['after the restart']);
    expect(errorsOf(page)).toEqual([]);
  });
});
