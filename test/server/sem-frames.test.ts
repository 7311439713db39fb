import fc from 'fast-check';
import { createEvent } from '../../src/index.js';
import { encodeFrame } from '../../src/server/frame-encoder.js';
import { toSemFrame, type FrameContext } from '../../src/server/sem-frames.js';

const origin = { conv_id: 'c', session_id: 's', inference_id: 'i', turn_id: 't' };

describe('encodeFrame', () => {
  it('should write exactly what JSON.stringify writes for the llm.delta frame, for any text', () => {
    const text = fc.string({ unit: 'binary', maxLength: 300 });
    fc.assert(
      fc.property(text, text, text, text, fc.option(fc.record({ id: text, model: text }), { nil: undefined }), fc.nat({ max: 2 ** 40 }), (delta, cumulative, inference, session, message, seq) => {
        const item = { seq, event: createEvent('text-delta', { ...origin, session_id: session, inference_id: inference }, 1, { delta, cumulative }) };
        const context: FrameContext = { messageOf: () => (message ? { ...message, seq: 1 } : undefined) };
        const { frame, text: encoded } = encodeFrame(item, context);
        expect(encoded).toBe(JSON.stringify(toSemFrame(item, context)));
        expect(frame.event).toMatchObject({ type: 'llm.delta', id: message?.id ?? inference, delta, cumulative, seq, metadata: { model: message?.model ?? '' } });
      }),
      { numRuns: 500 },
    );
  });

  it('should name an llm frame by the message id its event carries, whatever this instance learned', () => {
    const event = createEvent('text-delta', origin, 1, { message_id: 'i:3', delta: 'a', cumulative: 'a' });
    const { frame } = encodeFrame({ seq: 9, event }, { messageOf: () => ({ id: 'i:1', model: 'm', seq: 1 }) });
    expect(frame.event).toMatchObject({ type: 'llm.delta', id: 'i:3', metadata: { model: 'm' } });
    const thinking = encodeFrame({ seq: 10, event: createEvent('reasoning-started', origin, 1, { message_id: 'i:3' }) }, { messageOf: () => undefined });
    expect(thinking.frame.event).toMatchObject({ type: 'llm.thinking.start', id: 'i:3:thinking' });
  });

  it('should encode every other frame type the same way', () => {
    const event = createEvent('log', origin, 1, { level: 'info', message: 'm' });
    const { frame, text } = encodeFrame({ seq: 1, event }, { messageOf: () => undefined });
    expect(JSON.parse(text)).toEqual(frame);
    expect(frame).toEqual({ sem: true, event: { type: 'log', id: 'log:i:1', level: 'info', message: 'm', seq: 1 } });
  });

  it('should write BigInts as strings and repeated objects as "[circular]", in the frame and its text alike', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic['self'] = cyclic;
    const event = createEvent('tool-result', origin, 1, { tool_call_id: 'c1', name: 'weird', result: { big: 10n, cyclic } });
    const { frame, text } = encodeFrame({ seq: 2, event }, { messageOf: () => undefined });
    expect(frame.event).toMatchObject({ type: 'tool.result', result: { big: '10', cyclic: { name: 'loop', self: '[circular]' } } });
    expect(JSON.parse(text)).toEqual(frame);
  });
});
