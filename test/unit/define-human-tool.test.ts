import { z } from 'zod';
import { createToolRegistry, defineHumanTool, toTool } from '../../src/index.js';
import { BOOKING_ANSWER } from '../helpers/question-files.js';

describe('defineHumanTool (docs/protocol.md, Questions for a human)', () => {
  it('should make a tool that always asks, no grant covers, and whose answer schema is the zod answer as JSON Schema', () => {
    const tool = defineHumanTool({ name: 'ask', description: 'asks', parameters: z.object({ q: z.string() }), answer: z.enum(['yes', 'no']) });
    expect(tool).toMatchObject({ name: 'ask', breakpoint: true, grantable: false, human: { answer_schema: { type: 'string', enum: ['yes', 'no'] } } });
    expect(tool.human?.validateAnswer('yes')).toEqual({ ok: true, value: 'yes' });
    expect(tool.human?.validateAnswer('maybe')).toMatchObject({ ok: false });
    expect(() => tool.execute({ q: 'x' }, { signal: new AbortController().signal, tool_call_id: 'c' })).toThrow(/no answer from a human/);
  });

  it("should take a tools file's question with `human: {answer}` and no execute, and refuse an unusable one naming it", () => {
    const tool = toTool({ name: 'ask_booking', description: 'asks', parameters: { type: 'object' }, human: { answer: BOOKING_ANSWER } });
    expect(tool.human?.answer_schema).toEqual(BOOKING_ANSWER);
    expect(tool.human?.validateAnswer({ city: 'Lyon', nights: 1, room: 'single', breakfast: false })).toMatchObject({ ok: true });
    expect(tool.human?.validateAnswer({ city: 'Lyon', nights: 1.5, room: 'single', breakfast: false })).toMatchObject({ ok: false });
    expect(createToolRegistry([tool]).get('ask_booking')?.grantable).toBe(false);
    expect(() => toTool({ name: 'bad', description: '', parameters: {}, human: { answer: 5 as never } })).toThrow(/bad/);
  });
});
