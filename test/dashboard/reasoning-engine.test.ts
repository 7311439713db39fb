import { mkdir } from 'node:fs/promises';
import { newConvId, openDashboard, sendPrompt } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

const REASONING = 'The user wants a sum. One plus two is three, so I can answer without a tool.';
const ANSWER = 'One plus two is 3.';
const SCRIPT = { chunk_delay_ms: 10, responses: [{ reasoning: REASONING, text: ANSWER }] };

const suite = useDashboardSuite({ script: SCRIPT });

describe('dashboard: reasoning', () => {
  it('should stream the reasoning into a block above the answer, fold it when final, and unfold it on click', async () => {
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, newConvId('reasoning')));
    // Every state the block goes through, recorded as the page renders it (each frame is its own task).
    await page.evaluate(() => {
      const seen: { state?: string; open: boolean; text: string }[] = [];
      (window as unknown as { reasoningSeen: typeof seen }).reasoningSeen = seen;
      new MutationObserver(() => {
        const node = document.querySelector<HTMLDetailsElement>('[data-testid="reasoning"]');
        if (node) seen.push({ state: node.dataset.state, open: node.open, text: node.querySelector('[data-testid="reasoning-text"]')?.textContent ?? '' });
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    await sendPrompt(page, 'What is 1 + 2?');

    const block = page.getByTestId('reasoning');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    const seen = await page.evaluate(() => (window as unknown as { reasoningSeen: { state?: string; open: boolean; text: string }[] }).reasoningSeen);
    // While it streamed the block was open and showed the reasoning so far, growing.
    const streaming = seen.filter((snapshot) => snapshot.state === 'streaming');
    expect(streaming.every((snapshot) => snapshot.open)).toBe(true);
    expect(new Set(streaming.map((snapshot) => snapshot.text)).size).toBeGreaterThan(3);
    expect(streaming.some((snapshot) => snapshot.text.length > 0 && snapshot.text.length < REASONING.length)).toBe(true);

    await expect.poll(() => block.getAttribute('data-state')).toBe('final');
    expect(await block.evaluate((node) => (node as HTMLDetailsElement).open)).toBe(false);
    expect(await block.getByTestId('reasoning-summary').textContent()).toBe(`Reasoning · ${REASONING.split(' ').length} words`);
    expect(await block.getByTestId('reasoning-text').isVisible()).toBe(false);

    // Above the answer, inside the same assistant message.
    const message = page.getByTestId('assistant-text');
    expect(await message.getByTestId('assistant-body').textContent()).toBe(ANSWER);
    const above = await message.evaluate((node) => {
      const reasoning = node.querySelector('[data-testid="reasoning"]');
      const body = node.querySelector('[data-testid="assistant-body"]');
      return Boolean(reasoning && body && reasoning.compareDocumentPosition(body) & Node.DOCUMENT_POSITION_FOLLOWING);
    });
    expect(above).toBe(true);

    await block.getByTestId('reasoning-summary').click();
    expect(await block.getByTestId('reasoning-text').isVisible()).toBe(true);
    expect(await block.getByTestId('reasoning-text').textContent()).toBe(REASONING);
    await mkdir('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/dashboard-reasoning.png' });

    await block.getByTestId('reasoning-summary').click();
    expect(await block.getByTestId('reasoning-text').isVisible()).toBe(false);
  });

  it('should rebuild the reasoning block from the replayed frames on reload', async () => {
    const convId = newConvId('reasoning-replay');
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, convId));
    await sendPrompt(page, 'What is 1 + 2?');
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    await page.reload();
    await page.locator('[data-testid="run"][data-status="completed"]').waitFor();
    const block = page.getByTestId('reasoning');
    expect(await block.getAttribute('data-state')).toBe('final');
    expect(await block.getByTestId('reasoning-text').textContent()).toBe(REASONING);
  });
});

describe('dashboard: which engine answers', () => {
  it('should say that the scripted engine ignores the prompt', async () => {
    const page = suite.track(await openDashboard(suite.browser, suite.server.url, newConvId('engine')));
    const notice = page.getByTestId('engine-notice');
    await notice.waitFor();
    expect(await notice.textContent()).toContain('Scripted demo.');
    expect(await notice.textContent()).toContain('whatever you type, the same steps play in order');
    expect(await page.getByTestId('engine-badge').textContent()).toBe('scripted');
    expect(await page.getByTestId('engine-badge').getAttribute('data-engine')).toBe('scripted');
  });
});
