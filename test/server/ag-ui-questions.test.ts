import { EventType, type Interrupt } from '@ag-ui/core';
import { createAgUiClient, createLoggedTools, eventOf } from '../helpers/ag-ui-client.js';
import { askColor, COLOR_SCRIPT } from '../helpers/question-files.js';
import { get, startTestServer, type TestServer } from '../helpers/server-harness.js';

/** docs/ag-ui.md, Questions: a question is one `input_required` interrupt whose resume payload is the answer. */
describe('questions over POST /ag-ui with @ag-ui/client HttpAgent', () => {
  const log: { name: string; args: unknown }[] = [];
  let t: TestServer;
  let n = 0;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: COLOR_SCRIPT, runtime: { tools: [...createLoggedTools(log), askColor], pauseTimeoutMs: 20_000 } });
  });
  afterAll(() => t.close());
  beforeEach(() => void log.splice(0));

  const asked = async () => {
    const threadId = `agq-${++n}`;
    const client = createAgUiClient(`${t.base}/ag-ui`, threadId, { prompt: 'paint it' });
    // Step mode off: the question pauses all the same.
    const first = await client.run();
    expect(eventOf(first, EventType.RUN_FINISHED).outcome?.type).toBe('interrupt');
    return { client, threadId, interrupts: [...client.agent.pendingInterrupts] as Interrupt[] };
  };
  const pendingOf = async (threadId: string): Promise<any[]> => (await get(t.base, `/debug/pauses?conv_id=${threadId}`)).body.pauses;

  it('should show the question as an input_required interrupt with the answer schema, and go on with the answer as its result', async () => {
    const { client, threadId, interrupts } = await asked();
    const [pause] = await pendingOf(threadId);
    expect(pause).toMatchObject({ kind: 'question' });
    expect(interrupts).toEqual([
      expect.objectContaining({ id: `${pause.pause_id}:call_q`, reason: 'input_required', toolCallId: 'call_q', responseSchema: pause.answer_schema }),
      expect.objectContaining({ id: `${pause.pause_id}:call_echo`, reason: 'tool_call', toolCallId: 'call_echo' }),
    ]);
    expect(interrupts[0]?.responseSchema).toMatchObject({ type: 'object', properties: { color: { enum: ['red', 'blue'] } } });

    const done = await client.resume((interrupt) => (interrupt.reason === 'input_required' ? { color: 'blue', coats: 2 } : { approved: true }));
    expect(done.types.filter((type) => type === 'TOOL_CALL_RESULT')).toHaveLength(2);
    expect(eventOf(done, EventType.TOOL_CALL_RESULT)).toMatchObject({ toolCallId: 'call_q', content: '{"color":"blue","coats":2}' });
    expect(eventOf(done, EventType.RUN_FINISHED).outcome?.type).toBe('success');
    const { decisions } = (await get(t.base, `/conversations/${threadId}/decisions`)).body;
    expect(decisions).toEqual([expect.objectContaining({ reason: 'answered', answers: { call_q: { color: 'blue', coats: 2 } } })]);
  });

  it('should refuse an answer that fails its schema, or that comes with a denial, as invalid_resume and change nothing', async () => {
    const { client, threadId, interrupts } = await asked();
    const [question, echo] = interrupts as [Interrupt, Interrupt];
    const other = createAgUiClient(`${t.base}/ag-ui`, threadId);
    const cases = [
      [{ interruptId: question.id, status: 'resolved', payload: { color: 'green', coats: 1 } }, { interruptId: echo.id, status: 'resolved', payload: { approved: true } }],
      [{ interruptId: question.id, status: 'resolved' }, { interruptId: echo.id, status: 'resolved', payload: { approved: true } }],
      [{ interruptId: question.id, status: 'resolved', payload: { color: 'red', coats: 1 } }, { interruptId: echo.id, status: 'resolved', payload: { approved: false } }],
      [{ interruptId: question.id, status: 'resolved', payload: { color: 'red', coats: 1 } }],
    ] as const;
    for (const resume of cases) {
      const refused = await other.run({ resume: resume.map((entry) => ({ ...entry })) });
      expect(refused.types).toEqual(['RUN_STARTED', 'RUN_ERROR']);
      expect(refused.last).toMatchObject({ code: 'invalid_resume' });
    }
    expect((await pendingOf(threadId)).map((pause) => pause.kind)).toEqual(['question']);
    expect(log).toEqual([]);
    const done = await client.resume((interrupt) => (interrupt.reason === 'input_required' ? { color: 'red', coats: 1 } : { approved: true }));
    expect(eventOf(done, EventType.RUN_FINISHED).outcome?.type).toBe('success');
  });
});
