import { EventType } from '@ag-ui/core';
import { createAgUiClient, eventOf } from '../helpers/ag-ui-client.js';
import { get, post } from '../helpers/server-harness.js';
import { useTwoInstances } from './helpers.js';

/**
 * AG-UI on a service of two instances (docs/ag-ui.md, Several instances): the run is owned by A, the
 * AG-UI client talks to B; B's resume is a decision A takes, and B streams A's frames of the resumed run.
 */
describe('AG-UI across instances', () => {
  const instances = useTwoInstances();
  const STEP = { forwardedProps: { stepwise: { step_mode: true } } };

  it('should stream from B a run owned by A, resumed with an edit from B, through both phases', async () => {
    const { a, b } = await instances();
    const started = createAgUiClient(`${a.base}/ag-ui`, 'ag1', { prompt: 'go' });
    const first = await started.run(STEP);
    expect(first.last).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: 'interrupt' } });
    const [interrupt] = started.agent.pendingInterrupts;

    const onB = createAgUiClient(`${b.base}/ag-ui`, 'ag1');
    const edited = await onB.run({ resume: [{ interruptId: interrupt?.id ?? '', status: 'resolved', payload: { approved: true, editedArgs: { n: 5 } } }] });
    expect(eventOf(edited, EventType.TOOL_CALL_RESULT)).toMatchObject({ toolCallId: 'call_1', content: '{"ok":true,"n":5}' });
    expect(edited.last).toMatchObject({ outcome: { type: 'interrupt', interrupts: [expect.objectContaining({ reason: 'stepwise:after_tools' })] } });

    const stale = await createAgUiClient(`${b.base}/ag-ui`, 'ag1').run({ resume: [{ interruptId: interrupt?.id ?? '', status: 'resolved', payload: { approved: true } }] });
    expect(stale.last).toMatchObject({ type: EventType.RUN_ERROR, code: 'pause_resolved' });

    const done = await onB.resume(() => ({}));
    expect(done.last).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: 'success' } });
    expect(done.events.filter((event) => event.type === EventType.TEXT_MESSAGE_CONTENT).map((event) => (event as { delta: string }).delta).join('')).toBe('All done.');
    const decisions = (await get(a.base, '/conversations/ag1/decisions')).body.decisions;
    expect(decisions.map((decision: { reason: string }) => decision.reason)).toEqual(['edited', 'continued']);
  }, 60_000);

  it('should answer pause_resolved on B when A decided first', async () => {
    const { a, b } = await instances();
    const started = createAgUiClient(`${a.base}/ag-ui`, 'ag2', { prompt: 'go' });
    await started.run(STEP);
    const [pause] = (await get(a.base, '/debug/pauses?conv_id=ag2')).body.pauses;
    expect((await post(a.base, '/debug/continue', { pause_id: pause.pause_id, action: 'deny', reason: 'A said no' })).status).toBe(200);
    const late = await createAgUiClient(`${b.base}/ag-ui`, 'ag2').run({
      resume: started.agent.pendingInterrupts.map((interrupt) => ({ interruptId: interrupt.id, status: 'resolved', payload: { approved: true } })),
    });
    expect(late.types).toEqual(['RUN_STARTED', 'RUN_ERROR']);
    expect(late.last).toMatchObject({ code: 'pause_resolved' });
  }, 60_000);
});
