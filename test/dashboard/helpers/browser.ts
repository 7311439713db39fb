import { chromium, type Browser, type Locator, type Page } from 'playwright-core';

/** Debian's Chromium, headless, as CI installs it with apt-get. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

let counter = 0;
/** A conversation id unique to one test, so each plays the script from its first response. */
export const newConvId = (label: string): string => `t-${label}-${process.pid}-${Date.now().toString(36)}-${(counter += 1)}`;

const pageErrors = new WeakMap<Page, string[]>();
/** Uncaught exceptions thrown in the page's scripts; every test expects none. */
export const errorsOf = (page: Page): string[] => pageErrors.get(page) ?? [];

/** A new page (its own browser context, so its own sessionStorage) with page errors recorded. */
export async function newPage(browser: Browser): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  pageErrors.set(page, errors);
  page.on('pageerror', (error) => errors.push(error.message));
  // The context goes with its page; it may already be gone when the browser closes first.
  page.on('close', () => void context.close().catch(() => undefined));
  return page;
}

/** Opens the dashboard on `convId` and waits until its stream is live. */
export async function openDashboard(browser: Browser, baseUrl: string, convId: string): Promise<Page> {
  const page = await newPage(browser);
  await page.goto(`${baseUrl}/#/c/${convId}`);
  await page.locator('[data-testid="conn-status"][data-state="open"]').waitFor();
  return page;
}

/** Turns step mode on with the page's toggle, waiting for the server to accept it. */
export async function enableStepMode(page: Page): Promise<void> {
  const accepted = page.waitForResponse((response) => response.url().endsWith('/debug/step/enable') && response.status() === 200);
  await page.getByTestId('step-toggle-label').click();
  await accepted;
}

/** Types a prompt and sends it with the page's composer, waiting for the /chat reply. */
export async function sendPrompt(page: Page, prompt: string): Promise<void> {
  const replied = page.waitForResponse((response) => response.url().endsWith('/chat') && response.request().method() === 'POST');
  await page.getByTestId('prompt-input').fill(prompt);
  await page.getByTestId('send').click();
  const response = await replied;
  if (response.status() !== 200) throw new Error(`/chat answered ${response.status()}: ${await response.text()}`);
}

/** The open pause card of the given phase (there is one at a time in these scripts). */
export const openPause = (page: Page, phase: string): Locator => page.locator(`[data-testid="pause-card"][data-state="open"][data-phase="${phase}"]`);

/** Every request the page sends to `pathEnd`, recorded from now on. */
export function recordRequests(page: Page, pathEnd: string): string[] {
  const seen: string[] = [];
  page.on('request', (request) => {
    if (new URL(request.url()).pathname.endsWith(pathEnd)) seen.push(request.postData() ?? '');
  });
  return seen;
}

/** Whether a URL is where the dashboard sends a decision: `POST /pauses/:pause_id`, or `/debug/continue` for edited results. */
export const isDecisionUrl = (url: string): boolean => /\/(debug\/continue|pauses\/[^/]+)$/.test(new URL(url).pathname);

/** The decisions the page sent, each as the body of `/debug/continue` (the pause id of a `/pauses/:pause_id` path put in it). */
export function recordDecisions(page: Page): string[] {
  const seen: string[] = [];
  page.on('request', (request) => {
    if (request.method() !== 'POST' || !isDecisionUrl(request.url())) return;
    const path = new URL(request.url()).pathname;
    const body = JSON.parse(request.postData() ?? '{}') as Record<string, unknown>;
    const pauseId = /\/pauses\/([^/]+)$/.exec(path)?.[1];
    seen.push(JSON.stringify(pauseId === undefined ? body : { pause_id: decodeURIComponent(pauseId), ...body }));
  });
  return seen;
}

/** The seqs of the event log rows, in page order. */
export const shownSeqs = (page: Page): Promise<number[]> =>
  page.locator('[data-testid="frame"]').evaluateAll((rows) => rows.map((row) => Number((row as HTMLElement).dataset.seq)));
