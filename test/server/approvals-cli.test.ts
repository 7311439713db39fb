import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get, post } from '../helpers/server-harness.js';
import { ensureBuilt, startCli, type CliServer } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { createAgUiClient } from '../helpers/ag-ui-client.js';
import { BOOKING_ANSWER, GOOD_ANSWER } from '../helpers/question-files.js';

const ALICE = 'token-alice';
const BOB = 'token-bob';
const SECRET = 'webhook-secret-of-the-receiver';

/**
 * docs/protocol.md, The inbox: approvals need no debugger. Without `--debug`, a pause that exists without step
 * mode (a breakpoint tool, a question) is answered by `POST /pauses/:pause_id`, a signed link and an AG-UI
 * resume, with the owner rules and audit of `/debug/continue`; step mode and `/debug/*` stay off.
 */
describe('approvals without debug mode, through the CLI', () => {
  let dir: string;
  let receiver: WebhookReceiver;
  let server: CliServer;
  beforeAll(() => ensureBuilt(), 120_000);
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'stepwise-approvals-'));
    const tools = join(dir, 'tools.mjs');
    writeFileSync(
      tools,
      `export default [
  { name: 'wire', description: 'sends money', breakpoint: true, parameters: { type: 'object', properties: { amount: { type: 'number' } } }, execute: (args) => ({ sent: args.amount }) },
  { name: 'ask', description: 'asks', parameters: { type: 'object', properties: { question: { type: 'string' } } }, human: { answer: ${JSON.stringify(BOOKING_ANSWER)} } },
];\n`,
    );
    const script = join(dir, 'script.json');
    const wire = (amount: number) => ({ tool_calls: [{ id: `call_${amount}`, name: 'wire', arguments: { amount } }] });
    writeFileSync(script, JSON.stringify({ responses: [wire(1), wire(2), { text: 'done' }] }));
    receiver = await startReceiver(SECRET);
    const webhooks = join(dir, 'webhooks.json');
    writeFileSync(webhooks, JSON.stringify({ webhooks: [{ url: receiver.url, secret: SECRET }], link_secret: 'the-link-secret-of-this-service' }));
    server = await startCli(['--port', '0', '--tools', tools, '--script', script, '--webhooks', webhooks, '--pause-timeout-ms', '60000'], {
      STEPWISE_AUTH_TOKENS: `alice:${ALICE},bob:${BOB}`,
    });
  });
  afterEach(async () => {
    await server.stop('SIGKILL');
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (conv: string): Promise<SemClient> => {
    const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${conv}&access_token=${ALICE}`);
    expect((await post(server.base, '/chat', { prompt: 'pay', conv_id: conv }, ALICE)).status).toBe(200);
    return ws;
  };

  it('should continue and deny a breakpoint pause by POST /pauses/:pause_id, refuse another user, and keep step mode off', async () => {
    const ws = await start('pay1');
    const first = await ws.next('debugger.pause');
    // Step mode and the debug routes stay off; another user may not decide; result edits need debug mode.
    expect((await post(server.base, '/debug/continue', { pause_id: first.pause_id }, ALICE)).status).toBe(404);
    expect((await post(server.base, '/debug/step/enable', { conv_id: 'pay1' }, ALICE)).status).toBe(404);
    expect((await post(server.base, '/chat', { prompt: 'x', overrides: { step_mode: true } }, ALICE)).body.error.code).toBe('debug_disabled');
    expect(await post(server.base, `/pauses/${first.pause_id}`, { action: 'continue' }, BOB)).toMatchObject({ status: 403, body: { error: { code: 'forbidden' } } });
    expect((await post(server.base, `/pauses/${first.pause_id}`, { action: 'edit', results: { call_1: 1 } }, ALICE)).body.error.code).toBe('invalid_action');

    expect(await post(server.base, `/pauses/${first.pause_id}`, { action: 'continue' }, ALICE)).toMatchObject({ status: 200, body: { ok: true, pause: { pause_id: first.pause_id } } });
    expect(await ws.next('tool.result')).toMatchObject({ id: 'call_1', result: { sent: 1 } });
    const second = await ws.next('debugger.pause');
    expect((await post(server.base, `/pauses/${second.pause_id}`, { action: 'deny', reason: 'too much' }, ALICE)).status).toBe(200);
    expect((await ws.next('tool.result')).error).toBe('denied by operator: too much');
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    expect((await post(server.base, `/pauses/${second.pause_id}`, {}, ALICE)).body.error.code).toBe('pause_resolved');
    expect((await post(server.base, '/pauses/nope', {}, ALICE)).status).toBe(404);

    const { decisions } = (await get(server.base, '/conversations/pay1/decisions', ALICE)).body;
    expect(decisions.map((decision: { reason: string; by: string }) => [decision.reason, decision.by])).toEqual([
      ['continued', 'alice'],
      ['denied', 'alice'],
    ]);
    await ws.close();
  }, 30_000);

  it('should decide by a signed link and by an AG-UI resume without debug mode', async () => {
    const ws = await start('pay2');
    const pause = await ws.next('debugger.pause');
    const delivery = await receiver.next((received) => received.body?.pause?.pause_id === pause.pause_id);
    const link = new URL(delivery.body.links.continue as string);
    const clicked = await fetch(`${server.base}${link.pathname}`, { method: 'POST', headers: { accept: 'application/json' } });
    expect(clicked.status).toBe(200);
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: pause.pause_id, reason: 'continued', by: 'link' });

    // The next pause of the same run, denied by its link.
    const next = await ws.next('debugger.pause');
    const again = await receiver.next((received) => received.body?.pause?.pause_id === next.pause_id);
    const deny = new URL(again.body.links.deny as string);
    expect((await fetch(`${server.base}${deny.pathname}`, { method: 'POST', headers: { accept: 'application/json' } })).status).toBe(200);
    expect(await ws.next('debugger.resume')).toMatchObject({ pause_id: next.pause_id, reason: 'denied', by: 'link' });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    await ws.close();

    // A run started from AG-UI: its breakpoint is an interrupt, and the resume that denies it is the decision.
    const watcher = await SemClient.connect(`${server.wsBase}/ws?conv_id=pay3&access_token=${ALICE}`);
    const agUi = createAgUiClient(`${server.base}/ag-ui`, 'pay3', { token: ALICE, prompt: 'pay' });
    const interrupted = await agUi.run();
    expect(interrupted.last).toMatchObject({ type: 'RUN_FINISHED', outcome: { interrupts: [expect.objectContaining({ id: expect.stringMatching(/:call_1$/) })] } });
    const resumed = await agUi.resume(() => ({ approved: false, reason: 'not now' }));
    expect(resumed.types).not.toContain('RUN_ERROR');
    expect(await watcher.next('debugger.resume')).toMatchObject({ reason: 'denied', by: 'alice' });
    expect((await watcher.next('tool.result')).error).toBe('denied by operator: not now');
    await watcher.close();
  }, 30_000);

  it('should answer a question by POST /pauses/:pause_id without debug mode', async () => {
    writeFileSync(join(dir, 'script.json'), JSON.stringify({ responses: [{ tool_calls: [{ id: 'call_q', name: 'ask', arguments: { question: 'Where?' } }] }, { text: 'booked' }] }));
    await server.stop('SIGKILL');
    server = await startCli(['--port', '0', '--tools', join(dir, 'tools.mjs'), '--script', join(dir, 'script.json'), '--pause-timeout-ms', '60000'], {
      STEPWISE_AUTH_TOKENS: `alice:${ALICE},bob:${BOB}`,
    });
    const ws = await start('ask1');
    const pause = await ws.next('debugger.pause');
    expect(pause.kind).toBe('question');
    expect((await post(server.base, `/pauses/${pause.pause_id}`, { action: 'answer', answers: { call_q: { city: 'x' } } }, ALICE)).body.error.code).toBe('invalid_arguments');
    expect((await post(server.base, `/pauses/${pause.pause_id}`, { action: 'answer', answers: { call_q: GOOD_ANSWER } }, ALICE)).status).toBe(200);
    expect(await ws.next('tool.result')).toMatchObject({ id: 'call_q', result: GOOD_ANSWER });
    expect(await ws.next('run.end')).toMatchObject({ status: 'completed' });
    await ws.close();
  }, 30_000);
});
