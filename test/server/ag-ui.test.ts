import { EventType, type Interrupt } from '@ag-ui/core';
import type { Script } from '../../src/engines/scripted.js';
import { createLoggedTools, createAgUiClient, eventOf } from '../helpers/ag-ui-client.js';
import { get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';

/** Per conversation: reasoning, text and two calls; then an answer. */
const SCRIPT: Script = {
  responses: [
    {
      reasoning: 'Both tools are needed.',
      text: 'Let me add and echo.',
      tool_calls: [
        { id: 'call_add', name: 'add', arguments: { a: 1, b: 2 } },
        { id: 'call_echo', name: 'echo', arguments: { text: 'hi' } },
      ],
    },
    { text: 'All done.' },
  ],
};

const STEP = { forwardedProps: { stepwise: { step_mode: true } } };
const approve = (): unknown => ({ approved: true });
/** Event types with repeated deltas counted once, so a test does not depend on how text was chunked. */
const runs = (types: readonly string[]): string[] => types.filter((type, i) => !(type.endsWith('_CONTENT') && types[i - 1] === type));

describe('POST /ag-ui with @ag-ui/client HttpAgent', () => {
  const log: { name: string; args: unknown }[] = [];
  let t: TestServer;
  let n = 0;
  const thread = (): string => `agui-${++n}`;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: SCRIPT, runtime: { tools: createLoggedTools(log), pauseTimeoutMs: 20_000 } });
  });
  afterAll(() => t.close());
  beforeEach(() => void log.splice(0));

  it('should stream a run to its pause as interrupts, and approve it through both phases', async () => {
    const threadId = thread();
    const client = createAgUiClient(`${t.base}/ag-ui`, threadId, { prompt: 'add and echo' });
    const first = await client.run(STEP);
    expect(runs(first.types)).toEqual([
      'RUN_STARTED',
      'REASONING_START', 'REASONING_MESSAGE_START', 'REASONING_MESSAGE_CONTENT', 'REASONING_MESSAGE_END', 'REASONING_END',
      'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END',
      'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END',
      'RUN_FINISHED',
    ]);
    const finished = eventOf(first, EventType.RUN_FINISHED);
    expect(finished.outcome?.type).toBe('interrupt');
    const interrupts = client.agent.pendingInterrupts;
    const [{ pause_id }] = (await get(t.base, `/debug/pauses?conv_id=${threadId}`)).body.pauses;
    expect(interrupts).toEqual([
      expect.objectContaining({ id: `${pause_id}:call_add`, reason: 'tool_call', toolCallId: 'call_add', message: expect.stringContaining('add') }),
      expect.objectContaining({ id: `${pause_id}:call_echo`, reason: 'tool_call', toolCallId: 'call_echo' }),
    ]);
    const [add] = interrupts as [Interrupt];
    expect(add.responseSchema).toMatchObject({ required: ['approved'], properties: { editedArgs: { type: 'object', properties: { a: { type: 'number' } } } } });
    expect(Date.parse(add.expiresAt ?? '')).toBeGreaterThan(Date.now() + 10_000);
    expect(log).toEqual([]);

    const second = await client.resume(approve);
    expect(second.types).toEqual(['RUN_STARTED', 'TOOL_CALL_RESULT', 'TOOL_CALL_RESULT', 'RUN_FINISHED']);
    expect(eventOf(second, EventType.TOOL_CALL_RESULT)).toMatchObject({ toolCallId: 'call_add', content: '{"sum":3}' });
    const afterTools = client.agent.pendingInterrupts;
    expect(afterTools).toEqual([expect.objectContaining({ reason: 'stepwise:after_tools' })]);
    expect(afterTools[0]?.id).not.toBe(pause_id);

    const third = await client.resume(() => ({}));
    expect(runs(third.types)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED']);
    expect(eventOf(third, EventType.RUN_FINISHED)).toMatchObject({ outcome: { type: 'success' }, usage: [expect.objectContaining({ model: expect.any(String) })] });
    expect(client.agent.pendingInterrupts).toEqual([]);
    expect(log).toEqual([
      { name: 'add', args: { a: 1, b: 2 } },
      { name: 'echo', args: { text: 'hi' } },
    ]);
    const messages = client.agent.messages.map((message) => message.role);
    expect(messages).toContain('tool');
  });
});

describe('AG-UI decisions', () => {
  const log: { name: string; args: unknown }[] = [];
  let t: TestServer;
  let n = 0;
  const thread = (): string => `decide-${++n}`;
  const paused = async (threadId = thread()) => {
    const client = createAgUiClient(`${t.base}/ag-ui`, threadId, { prompt: 'add and echo' });
    await client.run(STEP);
    return { client, threadId, interrupts: client.agent.pendingInterrupts };
  };
  const pausesOf = async (threadId: string): Promise<{ pause_id: string; phase: string }[]> => (await get(t.base, `/debug/pauses?conv_id=${threadId}`)).body.pauses;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: SCRIPT, runtime: { tools: createLoggedTools(log), pauseTimeoutMs: 20_000 } });
  });
  afterAll(() => t.close());
  beforeEach(() => void log.splice(0));

  it('should edit: the call runs with the edited arguments, and the transcript keeps the model\'s', async () => {
    const { client, threadId } = await paused();
    const edited = await client.resume((interrupt) => (interrupt.toolCallId === 'call_add' ? { approved: true, editedArgs: { a: 10, b: 5 } } : { approved: true }));
    expect(eventOf(edited, EventType.TOOL_CALL_RESULT)).toMatchObject({ toolCallId: 'call_add', content: '{"sum":15}' });
    expect(log).toEqual([
      { name: 'add', args: { a: 10, b: 5 } },
      { name: 'echo', args: { text: 'hi' } },
    ]);
    const decisions = (await get(t.base, `/conversations/${threadId}/decisions`)).body.decisions;
    expect(decisions[0]).toMatchObject({ reason: 'edited', edits: { call_add: { before: { a: 1, b: 2 }, after: { a: 10, b: 5 } } } });
  });

  it('should deny with the reason the model sees; a cancelled interrupt is a denial too', async () => {
    const { client } = await paused();
    const denied = await client.resume((interrupt) => (interrupt.toolCallId === 'call_add' ? { approved: false, reason: 'not now' } : 'cancel'));
    const results = denied.events.filter((event) => event.type === EventType.TOOL_CALL_RESULT);
    expect(results).toEqual([
      expect.objectContaining({ toolCallId: 'call_add', content: expect.stringContaining('denied by operator: not now; cancelled by the user'), metadata: { stepwise: { error: true } } }),
      expect.objectContaining({ toolCallId: 'call_echo', content: expect.stringContaining('denied by operator') }),
    ]);
    expect(log).toEqual([]);
  });

  it('should edit the results at after_tools', async () => {
    const { client, threadId } = await paused();
    await client.resume(approve);
    await client.resume(() => ({ results: { call_add: { sum: 99 } } }));
    const view = (await get(t.base, `/conversations/${threadId}`)).body;
    const use = view.turns[0].blocks.find((block: { kind: string; payload: { id: string } }) => block.kind === 'tool_use' && block.payload.id === 'call_add');
    expect(use).toMatchObject({ payload: { result: { sum: 99 } }, metadata: { original_result: { sum: 3 }, edited: true } });
  });

  it('should refuse a resume that fails the schema, leaves an interrupt open or names an unknown one, and change nothing', async () => {
    const { client, threadId, interrupts } = await paused();
    const [add, echo] = interrupts as [Interrupt, Interrupt];
    const other = createAgUiClient(`${t.base}/ag-ui`, threadId);
    const cases = [
      [{ interruptId: add.id, status: 'resolved', payload: { approved: true, editedArgs: { a: 'ten', b: 5 } } }, { interruptId: echo.id, status: 'resolved', payload: { approved: true } }],
      [{ interruptId: add.id, status: 'resolved', payload: { approved: 'yes' } }, { interruptId: echo.id, status: 'resolved', payload: { approved: true } }],
      [{ interruptId: add.id, status: 'resolved', payload: { approved: true } }],
      [{ interruptId: add.id, status: 'resolved', payload: { approved: true } }, { interruptId: `${echo.id}x`, status: 'resolved', payload: { approved: true } }],
      [{ interruptId: add.id, status: 'resolved', payload: { approved: false } }, { interruptId: echo.id, status: 'resolved', payload: { approved: true, editedArgs: { text: 'yo' } } }],
      [{ interruptId: 'pause_nope:call_add', status: 'resolved', payload: { approved: true } }],
    ] as const;
    for (const resume of cases) {
      const refused = await other.run({ resume: resume.map((entry) => ({ ...entry })) });
      expect(refused.types).toEqual(['RUN_STARTED', 'RUN_ERROR']);
      expect(refused.last).toMatchObject({ code: 'invalid_resume' });
    }
    expect((await pausesOf(threadId)).map((pause) => pause.phase)).toEqual(['after_inference']);
    expect(log).toEqual([]);
    expect((await client.resume(approve)).types).toContain('TOOL_CALL_RESULT');
  });

  it('should answer pause_resolved to a stale resume, and to one a dashboard decided first', async () => {
    const { client, threadId, interrupts } = await paused();
    const resume = interrupts.map((interrupt) => ({ interruptId: interrupt.id, status: 'resolved' as const, payload: { approved: true } }));
    await client.resume(approve);
    const stale = await createAgUiClient(`${t.base}/ag-ui`, threadId).run({ resume });
    expect(stale.last).toMatchObject({ type: EventType.RUN_ERROR, code: 'pause_resolved' });

    const second = await paused();
    const [pause] = await pausesOf(second.threadId);
    expect((await post(t.base, '/debug/continue', { pause_id: pause?.pause_id, action: 'deny', reason: 'dashboard says no' })).status).toBe(200);
    const late = await second.client.resume(approve);
    expect(late.types).toEqual(['RUN_STARTED', 'RUN_ERROR']);
    expect(late.last).toMatchObject({ code: 'pause_resolved', message: expect.stringContaining('denied') });
    expect(log.filter((entry) => entry.name === 'add')).toHaveLength(1);
  });

  it('should refuse bad bodies with JSON errors before any stream, and go on', async () => {
    const bad = [
      [{ threadId: 't1' }, 400],
      [{ threadId: 'bad id!', runId: 'r', messages: [{ id: 'm', role: 'user', content: 'hi' }] }, 400],
      [{ threadId: 'no-user', runId: 'r', messages: [] }, 400],
      [{ threadId: 'props', runId: 'r', messages: [{ id: 'm', role: 'user', content: 'hi' }], forwardedProps: { stepwise: { step_mode: 'on' } } }, 400],
      [{ threadId: 'nobody', runId: 'r', messages: [], resume: [{ interruptId: 'p:c', status: 'resolved' }] }, 404],
      ['{"threadId":', 400],
      [{ threadId: 'huge', runId: 'r', messages: [{ id: 'm', role: 'user', content: 'x'.repeat(1.1 * 1024 * 1024) }] }, 413],
    ] as const;
    for (const [body, status] of bad) {
      const reply = await post(t.base, '/ag-ui', body);
      expect([reply.status, reply.headers.get('content-type')]).toEqual([status, expect.stringContaining('application/json')]);
      expect(reply.body.error.code).toEqual(expect.any(String));
    }
    expect((await post(t.base, '/ag-ui/no-such-profile', { threadId: 'p1', runId: 'r', messages: [{ id: 'm', role: 'user', content: 'hi' }] })).body.error.code).toBe('unknown_profile');
    const { threadId } = await paused();
    const busy = await post(t.base, '/ag-ui', { threadId, runId: 'r2', messages: [{ id: 'm', role: 'user', content: 'again' }] });
    expect([busy.status, busy.body.error.code]).toEqual([409, 'run_in_progress']);
    expect((await get(t.base, '/healthz')).status).toBe(200);
  });
});
