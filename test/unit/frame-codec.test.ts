import { createEvent, type StepwiseEvent } from '../../src/index.js';
import { createFrameCodec } from '../../src/streams/frame-codec.js';

const run = { conv_id: 'c', session_id: 's', inference_id: 'run1', turn_id: 't' };
const started = (model: string): StepwiseEvent => createEvent('inference-started', run, 0, { model });
const delta = (text: string): StepwiseEvent => createEvent('text-delta', run, 0, { delta: text, cumulative: text });
const resumed = (iteration: number): StepwiseEvent =>
  createEvent('log', run, 0, { level: 'info', message: 'run run1 resumed', fields: { resumed: true, next: 'inference', iteration } });
const ended = (): StepwiseEvent => createEvent('run-ended', run, 0, { status: 'completed' });

/** Each frame's id and model (when it has one), encoded in hub order by one codec. */
function encodeInOrder(events: readonly StepwiseEvent[], firstSeq = 1): string[] {
  const codec = createFrameCodec();
  return events.map((event, i) => {
    const { event: sem } = JSON.parse(codec.textOf({ seq: firstSeq + i, event })) as { event: { id: string; metadata?: { model?: string } } };
    return sem.metadata?.model === undefined ? sem.id : `${sem.id} ${sem.metadata.model}`;
  });
}

describe('createFrameCodec', () => {
  it('should name each inference of a run <inference_id>:<n> and give its deltas its model', () => {
    expect(encodeInOrder([started('m1'), delta('a'), started('m2'), delta('b')])).toEqual(['run1:1 m1', 'run1:1 m1', 'run1:2 m2', 'run1:2 m2']);
  });

  it('should number a run resumed after a restart on from the inferences it had done', () => {
    expect(encodeInOrder([resumed(2), started('m'), delta('c')], 9)).toEqual(['log:run1:0', 'run1:3 m', 'run1:3 m']);
  });

  it('should keep nothing of a run at a pause: the next inference is named by its own message id', () => {
    const named = (message_id: string, model: string): StepwiseEvent => createEvent('inference-started', run, 0, { message_id, model });
    const paused = createEvent('paused', run, 0, {
      pause: { pause_id: 'p1', phase: 'after_inference', summary: '', deadline_ms: 1, ...run, tool_calls: [] },
    });
    const namedDelta = createEvent('text-delta', run, 0, { message_id: 'run1:2', delta: 'd', cumulative: 'd' });
    expect(encodeInOrder([named('run1:1', 'm1'), paused, named('run1:2', 'm2'), namedDelta])).toEqual(['run1:1 m1', 'p1', 'run1:2 m2', 'run1:2 m2']);
  });

  it('should keep nothing of a run after its end: a run of the same id starts again from 1', () => {
    expect(encodeInOrder([started('m'), ended(), started('m')])).toEqual(['run1:1 m', 'run1', 'run1:1 m']);
  });
});
