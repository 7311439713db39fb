import fc from 'fast-check';
import { createEvent } from '../../src/index.js';
import { llmDeltaText, toSemFrame, type FrameContext } from '../../src/server/sem-frames.js';

describe('llmDeltaText', () => {
  it('should write exactly what JSON.stringify writes for the llm.delta frame, for any text', () => {
    const text = fc.string({ unit: 'binary', maxLength: 300 });
    fc.assert(
      fc.property(text, text, text, text, fc.option(fc.record({ id: text, model: text }), { nil: undefined }), fc.nat({ max: 2 ** 40 }), (delta, cumulative, inference, session, message, seq) => {
        const origin = { conv_id: 'c', session_id: session, inference_id: inference, turn_id: 't' };
        const item = { seq, event: createEvent('text-delta', origin, 1, { delta, cumulative }) };
        const context: FrameContext = { messageOf: () => message };
        expect(llmDeltaText(item, context)).toBe(JSON.stringify(toSemFrame(item, context)));
      }),
      { numRuns: 500 },
    );
  });

  it('should leave every other frame type to the generic path', () => {
    const event = createEvent('log', { conv_id: 'c', session_id: 's', inference_id: 'i', turn_id: 't' }, 1, { level: 'info', message: 'm' });
    expect(llmDeltaText({ seq: 1, event }, { messageOf: () => undefined })).toBeUndefined();
  });
});
