import { newConvId, openDashboard } from './helpers/browser.js';
import { useDashboardSuite } from './helpers/suite.js';

const SCRIPT = { responses: [{ text: 'Echoing.', tool_calls: [{ id: 'call_echo', name: 'echo', arguments: { message: 'hi' } }] }, { text: 'Done.' }] };

/** docs/protocol.md, Grants: the dashboard lists the remembered approvals and revokes one with a click. */
describe('dashboard: grants', () => {
  const suite = useDashboardSuite({ script: SCRIPT });

  it('should list a grant made by a decision and revoke it with one click', async () => {
    const { server } = suite;
    const conv = newConvId('grants');
    const page = suite.track(await openDashboard(suite.browser, server.url, conv));
    expect(await page.getByTestId('grants').isHidden()).toBe(true);

    // Another operator decides over the API, remembering echo for this conversation.
    expect((await server.api('POST', '/chat', { prompt: 'echo', conv_id: conv, overrides: { step_mode: true } })).status).toBe(200);
    const pause = await page.locator('[data-testid="pause-card"][data-state="open"][data-phase="after_inference"]');
    await pause.waitFor();
    const pauseId = await pause.getAttribute('data-pause-id');
    const decided = await server.api('POST', '/debug/continue', { pause_id: pauseId, remember: { scope: 'conversation', tools: ['echo'] } });
    expect(decided.status).toBe(200);
    const { grant_id } = decided.body.grant;

    const row = page.locator(`[data-testid="grant"][data-grant-id="${grant_id}"]`);
    await row.waitFor({ timeout: 10_000 });
    expect(await row.getAttribute('data-scope')).toBe('conversation');
    expect(await row.getByTestId('grant-tools').textContent()).toBe('echo');
    expect(await row.textContent()).toContain(`in ${conv}`);

    await row.getByTestId('revoke-grant').click();
    await row.waitFor({ state: 'detached', timeout: 10_000 });
    expect((await server.api('GET', '/grants')).body).toEqual({ grants: [] });
    expect(await page.getByTestId('grants').isHidden()).toBe(true);
  }, 60_000);
});
