import { NodeChat } from '../helpers/ai-sdk-chat.js';
import { get } from '../helpers/server-harness.js';
import { useTwoInstances } from './helpers.js';

/** useChat on a service of two instances (docs/ai-sdk.md): the run is owned by A, the approvals go to B. */
describe('AI SDK chat across instances', () => {
  const instances = useTwoInstances();

  it('should take on B the decision of approvals for a run owned by A, and stream its results from B', async () => {
    const { a, b } = await instances();
    const onA = new NodeChat(`${a.base}/ai-sdk/chat`, 'ai1', { stepMode: true });
    await onA.sendMessage({ text: 'go' });
    await onA.settled();
    const [part] = onA.toolParts();
    expect(part).toMatchObject({ toolCallId: 'call_1', state: 'approval-requested' });

    const onB = new NodeChat(`${b.base}/ai-sdk/chat`, 'ai1', { stepMode: true });
    onB.plain.messages = structuredClone(onA.plain.messages);
    await onB.addToolApprovalResponse({ id: part?.approval?.id ?? '', approved: true });
    await onB.settled();
    expect(onB.plain.error).toBeUndefined();
    expect(onB.toolParts()).toEqual([expect.objectContaining({ toolCallId: 'call_1', state: 'output-available', output: { ok: true, n: 1 } })]);
    const decisions = (await get(a.base, '/conversations/ai1/decisions')).body.decisions;
    expect(decisions).toEqual([expect.objectContaining({ reason: 'continued', phase: 'after_inference' })]);
  }, 60_000);
});
