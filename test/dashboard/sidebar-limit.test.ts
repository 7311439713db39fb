import { newConvId, newPage } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

const suite = useDashboardSuite({ script: { responses: [{ text: 'Hello.' }] } });

/** More conversations than the sidebar lists: it shows the newest 200, says so, and asks only their first prompts. */
describe('dashboard: a sidebar on a server with many conversations', () => {
  it('should list the 200 newest, say more exist, and read the first prompt of those alone', async () => {
    const convIds: string[] = [];
    for (let i = 0; i < 205; i += 1) {
      const convId = newConvId('many');
      expect((await suite.server.api('POST', '/chat', { prompt: `question ${i}`, conv_id: convId })).status).toBe(200);
      convIds.push(convId);
    }
    const newest = convIds.at(-1) as string;
    const page = suite.track(await newPage(suite.browser));
    const asked: string[] = [];
    page.on('request', (request) => asked.push(new URL(request.url()).pathname));
    await page.goto(`${suite.server.url}/#/c/${newest}`);
    const items = page.getByTestId('conversation-item');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="conversation-item"]').length === 200);
    await page.getByTestId('conversation-more').waitFor();
    expect(await page.getByTestId('conversation-more').textContent()).toBe('The 200 newest are listed.');
    expect(await items.evaluateAll((nodes) => nodes.map((node) => (node as HTMLElement).dataset.convId))).not.toContain(convIds[0]);
    await page.locator(`[data-testid="conversation-item"][data-conv-id="${newest}"]`).waitFor();
    // The first prompts of the listed ones are asked for; of the oldest, past the 200, never.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="conv-label"][data-kind="prompt"]').length === 200);
    expect(asked).toContain(`/conversations/${convIds[10]}`);
    for (const convId of convIds.slice(0, 5)) expect(asked).not.toContain(`/conversations/${convId}`);
  }, 60_000);
});
