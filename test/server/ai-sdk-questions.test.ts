import { createLoggedTools } from '../helpers/ag-ui-client.js';
import { NodeChat } from '../helpers/ai-sdk-chat.js';
import { askColor, COLOR_SCRIPT } from '../helpers/question-files.js';
import { get, post, startTestServer, type TestServer } from '../helpers/server-harness.js';

/** docs/ai-sdk.md, Pauses: an approval carries no answer, so a question shows as the pause's data part, answered elsewhere. */
describe('questions on POST /ai-sdk/chat', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ debug: true, script: COLOR_SCRIPT, runtime: { tools: [...createLoggedTools([]), askColor], pauseTimeoutMs: 20_000 } });
  });
  afterAll(() => t.close());

  it('should end the stream at a question with a data-stepwise-pause part and no approval request, the run waiting for its answer', async () => {
    const chat = new NodeChat(`${t.base}/ai-sdk/chat`, 'aisq-1');
    await chat.sendMessage({ text: 'paint it' });
    await chat.settled();
    expect(chat.plain.error).toBeUndefined();
    const parts = chat.plain.messages.at(-1)?.parts ?? [];
    const data = parts.find((part) => part.type === 'data-stepwise-pause') as { data: { pause_id: string; kind: string; answer_schema: unknown } } | undefined;
    expect(data?.data).toMatchObject({ kind: 'question', answer_schema: expect.objectContaining({ type: 'object' }) });
    expect(chat.toolParts().some((part) => part.state === 'approval-requested')).toBe(false);
    const answer = { pause_id: data?.data.pause_id, action: 'answer', answers: { call_q: { color: 'red', coats: 3 } } };
    expect((await post(t.base, '/debug/continue', answer)).status).toBe(200);
    for (let i = 0; i < 200 && (await get(t.base, '/conversations/aisq-1')).body.running; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    const { turns } = (await get(t.base, '/conversations/aisq-1')).body;
    expect(turns[0].blocks.find((block: any) => block.kind === 'tool_use' && block.payload.id === 'call_q').payload.result).toEqual({ color: 'red', coats: 3 });
  });
});
