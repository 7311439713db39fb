import type { Script } from '../../src/engines/scripted.js';
import { createLoggedTools } from '../helpers/ag-ui-client.js';
import { NodeChat } from '../helpers/ai-sdk-chat.js';
import { get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';

const SCRIPT: Script = {
  responses: [
    {
      reasoning: 'Two tools.',
      text: 'Let me add and echo.',
      tool_calls: [
        { id: 'call_add', name: 'add', arguments: { a: 1, b: 2 } },
        { id: 'call_echo', name: 'echo', arguments: { text: 'hi' } },
      ],
    },
    { text: 'All done.' },
  ],
};

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('POST /ai-sdk/chat with the ai package\'s chat (AbstractChat + DefaultChatTransport)', () => {
  const log: { name: string; args: unknown }[] = [];
  let t: TestServer;
  let n = 0;
  const conv = (): string => `aisdk-${++n}`;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: SCRIPT, runtime: { tools: createLoggedTools(log), pauseTimeoutMs: 20_000 } });
  });
  afterAll(() => t.close());
  beforeEach(() => void log.splice(0));

  it('should show approval requests at a pause, and run what the approvals allow', async () => {
    const id = conv();
    const chat = new NodeChat(`${t.base}/ai-sdk/chat`, id, { stepMode: true });
    await chat.sendMessage({ text: 'add and echo' });
    await chat.settled();
    expect(chat.plain.error).toBeUndefined();
    const [pause] = (await get(t.base, `/debug/pauses?conv_id=${id}`)).body.pauses;
    expect(chat.toolParts()).toEqual([
      expect.objectContaining({ type: 'tool-add', toolCallId: 'call_add', state: 'approval-requested', input: { a: 1, b: 2 }, approval: { id: `${pause.pause_id}:call_add` } }),
      expect.objectContaining({ type: 'tool-echo', toolCallId: 'call_echo', state: 'approval-requested', approval: { id: `${pause.pause_id}:call_echo` } }),
    ]);
    expect(log).toEqual([]);

    await chat.addToolApprovalResponse({ id: `${pause.pause_id}:call_add`, approved: true });
    await chat.addToolApprovalResponse({ id: `${pause.pause_id}:call_echo`, approved: false, reason: 'no echoes' });
    await chat.settled();
    expect(chat.plain.error).toBeUndefined();
    expect(chat.toolParts()).toEqual([
      expect.objectContaining({ toolCallId: 'call_add', state: 'output-available', output: { sum: 3 } }),
      expect.objectContaining({ toolCallId: 'call_echo', state: 'output-denied' }),
    ]);
    // The after_tools pause shows as a data part; it is answered over the HTTP API (or the dashboard).
    const data = chat.plain.messages.at(-1)?.parts.find((part) => part.type === 'data-stepwise-pause') as { data: { pause_id: string; phase: string } } | undefined;
    expect(data?.data.phase).toBe('after_tools');
    expect((await post(t.base, '/debug/continue', { pause_id: data?.data.pause_id })).status).toBe(200);
    await waitFor(async () => (await get(t.base, `/conversations/${id}`)).body.running === false);
    expect(log).toEqual([{ name: 'add', args: { a: 1, b: 2 } }]);
    const decisions = (await get(t.base, `/conversations/${id}/decisions`)).body.decisions;
    expect(decisions).toEqual([
      expect.objectContaining({ reason: 'denied', tool_call_ids: ['call_echo'], message: expect.stringContaining('no echoes') }),
      expect.objectContaining({ phase: 'after_tools', reason: 'continued' }),
    ]);
  });

  it('should run to the end without step mode, with text, reasoning and tool parts', async () => {
    const chat = new NodeChat(`${t.base}/ai-sdk/chat`, conv());
    await chat.sendMessage({ text: 'add and echo' });
    await chat.settled();
    const parts = chat.plain.messages.at(-1)?.parts ?? [];
    expect(parts.map((part) => part.type)).toEqual(expect.arrayContaining(['step-start', 'reasoning', 'text', 'tool-add', 'tool-echo']));
    expect(chat.toolParts().map((part) => [part.state, part.output])).toEqual([['output-available', { sum: 3 }], ['output-available', { text: 'hi' }]]);
    expect(parts.filter((part) => part.type === 'text').map((part) => (part as { text: string }).text)).toEqual(['Let me add and echo.', 'All done.']);
  });

  it('should refuse approvals of a pause a dashboard answered first with 409 pause_resolved, and change nothing', async () => {
    const id = conv();
    const chat = new NodeChat(`${t.base}/ai-sdk/chat`, id, { stepMode: true });
    await chat.sendMessage({ text: 'add and echo' });
    await chat.settled();
    const [pause] = (await get(t.base, `/debug/pauses?conv_id=${id}`)).body.pauses;
    expect((await post(t.base, '/debug/continue', { pause_id: pause.pause_id, action: 'deny', reason: 'dashboard' })).status).toBe(200);
    await chat.addToolApprovalResponse({ id: `${pause.pause_id}:call_add`, approved: true });
    await chat.addToolApprovalResponse({ id: `${pause.pause_id}:call_echo`, approved: true });
    await chat.settled();
    expect(chat.plain.status).toBe('error');
    expect(chat.plain.error?.message).toContain('pause_resolved');
    expect(log).toEqual([]);
  });

  it('should refuse bad bodies with JSON errors before any stream', async () => {
    const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'hi' }] };
    const bad = [
      [{ messages: [user] }, 400],
      [{ id: 'bad id!', messages: [user] }, 400],
      [{ id: 'x1', messages: [{ id: 'u', role: 'robot', parts: [] }] }, 400],
      [{ id: 'x2', messages: [{ id: 'a', role: 'assistant', parts: [{ type: 'text', text: 'hi' }] }] }, 400],
      [{ id: 'x3', messages: [user], stepwise: { step_mode: 'yes' } }, 400],
      [{ id: 'x4', messages: [{ ...user, parts: [{ type: 'text', text: 'x'.repeat(1.1 * 1024 * 1024) }] }] }, 413],
      [{ id: 'x5', messages: [{ id: 'a', role: 'assistant', parts: [{ type: 'tool-add', toolCallId: 'c', state: 'approval-responded', input: {}, approval: { id: 'pause_nope:c', approved: true } }] }] }, 404],
    ] as const;
    for (const [body, status] of bad) {
      const reply = await post(t.base, '/ai-sdk/chat', body);
      expect([reply.status, reply.headers.get('content-type')]).toEqual([status, expect.stringContaining('application/json')]);
    }
    expect((await get(t.base, '/healthz')).status).toBe(200);
  });
});

describe('POST /ai-sdk/chat with auth', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: SCRIPT, tokens: new Map([['tok-a', 'alice'], ['tok-b', 'bob']]) });
  });
  afterAll(() => t.close());

  it('should need a token and refuse another user\'s conversation with 403', async () => {
    const alice = new NodeChat(`${t.base}/ai-sdk/chat`, 'alices-chat', { token: 'tok-a', stepMode: true });
    await alice.sendMessage({ text: 'add and echo' });
    await alice.settled();
    expect(alice.toolParts().map((part) => part.state)).toEqual(['approval-requested', 'approval-requested']);
    const body = { id: 'alices-chat', messages: [{ id: 'u', role: 'user', parts: [{ type: 'text', text: 'mine now' }] }] };
    expect((await post(t.base, '/ai-sdk/chat', body)).status).toBe(401);
    expect((await post(t.base, '/ai-sdk/chat', body, 'tok-b')).body.error.code).toBe('forbidden');
    const bobApproves = { id: 'alices-chat', messages: [alice.plain.messages.at(-1)] };
    const approved = JSON.parse(JSON.stringify(bobApproves).replaceAll('"approval-requested"', '"approval-responded"').replaceAll('"approval":{"id":', '"approval":{"approved":true,"id":'));
    expect((await post(t.base, '/ai-sdk/chat', approved, 'tok-b')).body.error.code).toBe('forbidden');
  });
});
