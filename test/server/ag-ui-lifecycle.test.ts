import { EventType } from '@ag-ui/core';
import type { Script } from '../../src/engines/scripted.js';
import { parseTokens } from '../../src/server/auth.js';
import { createAgUiClient, createLoggedTools, eventOf } from '../helpers/ag-ui-client.js';
import { get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';

const STEP = { forwardedProps: { stepwise: { step_mode: true } } };
const ONE_CALL: Script = {
  responses: [{ text: 'Adding.', tool_calls: [{ id: 'call_1', name: 'add', arguments: { a: 2, b: 2 } }] }, { text: 'It is four.' }],
};

describe('AG-UI runs that end otherwise', () => {
  const log: { name: string; args: unknown }[] = [];
  let t: TestServer;
  let n = 0;
  const thread = (): string => `life-${++n}`;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: ONE_CALL, runtime: { tools: createLoggedTools(log), pauseTimeoutMs: 400 } });
  });
  afterAll(() => t.close());

  it('should run to the end without step mode: tool calls, results, text and usage', async () => {
    const client = createAgUiClient(`${t.base}/ag-ui`, thread(), { prompt: 'two and two' });
    const run = await client.run();
    expect(eventOf(run, EventType.TOOL_CALL_RESULT)).toMatchObject({ toolCallId: 'call_1', content: '{"sum":4}' });
    expect(run.last).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: 'success' }, usage: [expect.objectContaining({ totalTokens: expect.any(Number) })] });
    expect(client.agent.messages.at(-1)).toMatchObject({ role: 'assistant', content: 'It is four.' });
  });

  it('should answer pause_resolved once the deadline decided, and the client itself refuses an expired interrupt', async () => {
    const threadId = thread();
    const client = createAgUiClient(`${t.base}/ag-ui`, threadId, { prompt: 'two and two' });
    await client.run(STEP);
    const [interrupt] = client.agent.pendingInterrupts;
    expect(interrupt?.expiresAt).toEqual(expect.any(String));
    await new Promise((resolve) => setTimeout(resolve, 600));
    await expect(client.resume(() => ({ approved: true }))).rejects.toThrow(/expired/);
    const late = await createAgUiClient(`${t.base}/ag-ui`, threadId).run({ resume: [{ interruptId: interrupt?.id ?? '', status: 'resolved', payload: { approved: true } }] });
    expect(late.last).toMatchObject({ type: EventType.RUN_ERROR, code: 'pause_resolved', message: expect.stringContaining('timeout') });
  });
});

describe('AG-UI clients that go away, runs that are cancelled or fail', () => {
  const log: { name: string; args: unknown }[] = [];
  let t: TestServer;
  let n = 0;
  const thread = (): string => `slow-${++n}`;
  const SLOW: Script = { responses: [{ text: 'Adding the numbers slowly, one word at a time.', tool_calls: [{ id: 'call_1', name: 'add', arguments: { a: 1, b: 1 } }] }, { error: 'the model is overloaded' }], chunk_delay_ms: 40 };
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: SLOW, runtime: { tools: createLoggedTools(log), pauseTimeoutMs: 20_000 } });
  });
  afterAll(() => t.close());

  it('should leave the run paused when the client disconnects mid-stream, and resolvable from anywhere', async () => {
    const threadId = thread();
    const client = createAgUiClient(`${t.base}/ag-ui`, threadId, { prompt: 'one and one' });
    await client
      .run(STEP, { onTextMessageContentEvent: () => client.agent.abortRun() })
      .catch(() => undefined);
    let pauses: { pause_id: string }[] = [];
    for (let i = 0; i < 100 && pauses.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      pauses = (await get(t.base, `/debug/pauses?conv_id=${threadId}`)).body.pauses;
    }
    expect(pauses).toHaveLength(1);
    expect((await post(t.base, '/debug/continue', { pause_id: pauses[0]?.pause_id })).status).toBe(200);
    expect(log).toEqual([{ name: 'add', args: { a: 1, b: 1 } }]);
  });

  it('should finish cancelled when the run is cancelled mid-stream, and with RUN_ERROR when it fails', async () => {
    const threadId = thread();
    const client = createAgUiClient(`${t.base}/ag-ui`, threadId, { prompt: 'one and one' });
    let cancelling: Promise<unknown> | undefined;
    const cancelled = await client.run(undefined, { onTextMessageContentEvent: () => void (cancelling ??= post(t.base, '/chat/cancel', { conv_id: threadId })) });
    expect(cancelled.last).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: 'cancelled' } });

    const failing = createAgUiClient(`${t.base}/ag-ui`, thread(), { prompt: 'one and one' });
    const failed = await failing.run();
    expect(failed.last).toMatchObject({ type: EventType.RUN_ERROR, code: 'run_failed', message: expect.stringContaining('overloaded') });
  });
});

describe('AG-UI with auth', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: ONE_CALL, tokens: parseTokens('alice:tok-a,bob:tok-b') });
  });
  afterAll(() => t.close());

  it('should need a token, and refuse another user\'s thread with 403 before any stream', async () => {
    const body = { threadId: 'alices', runId: 'r1', messages: [{ id: 'm', role: 'user', content: 'hi' }] };
    expect((await post(t.base, '/ag-ui', body)).status).toBe(401);
    const alice = createAgUiClient(`${t.base}/ag-ui`, 'alices', { prompt: 'hi', token: 'tok-a' });
    expect((await alice.run(STEP)).last).toMatchObject({ outcome: { type: 'interrupt' } });
    const bob = await post(t.base, '/ag-ui', { ...body, runId: 'r2' }, 'tok-b');
    expect([bob.status, bob.body.error.code]).toEqual([403, 'forbidden']);
    const bobResume = await post(t.base, '/ag-ui', { ...body, runId: 'r3', resume: alice.agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: 'resolved', payload: { approved: true } })) }, 'tok-b');
    expect([bobResume.status, bobResume.body.error.code]).toEqual([403, 'forbidden']);
    expect((await alice.resume(() => ({ approved: true }))).types).toContain('TOOL_CALL_RESULT');
  });
});
