import fc from 'fast-check';
import { createLoggedTools } from '../helpers/ag-ui-client.js';
import { askColor, COLOR_SCRIPT } from '../helpers/question-files.js';
import { get, post, startTestServer } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { expectWellFormed } from '../helpers/well-formed.js';

/** The fuzzing of the wire (fuzz.test.ts), aimed at a real question's pause (docs/protocol.md, Questions for a human). */
describe('fuzzing answers', () => {
  it('should refuse any malformed answer to a question with a 400, leaving the question waiting (docs/protocol.md, Questions for a human)', async () => {
    const q = await startTestServer({ debug: true, script: COLOR_SCRIPT, runtime: { tools: [...createLoggedTools([]), askColor], pauseTimeoutMs: 60_000 } });
    try {
      const asker = await SemClient.connect(`${q.wsBase}/ws?conv_id=fuzz-q`);
      await post(q.base, '/chat', { prompt: 'x', conv_id: 'fuzz-q' });
      const { pause_id } = await asker.next('debugger.pause');
      // Anything but {color: 'red' | 'blue', coats: integer >= 1} for call_q; the other ids are no questions.
      const answer = fc.oneof(fc.jsonValue(), fc.record({ color: fc.oneof(fc.string(), fc.jsonValue()), coats: fc.oneof(fc.double(), fc.integer({ max: 0 }), fc.jsonValue()) }, { requiredKeys: [] }));
      const answers = fc.oneof(fc.dictionary(fc.constantFrom('call_q', 'call_echo', 'x'), answer), fc.jsonValue());
      await fc.assert(
        fc.asyncProperty(answers, fc.constantFrom('answer', 'continue', 'deny'), async (value, action) => {
          const reply = await post(q.base, '/debug/continue', { pause_id, action, answers: value });
          expectWellFormed(reply);
          expect(reply.status).toBe(400);
        }),
        { numRuns: 200 },
      );
      expect((await get(q.base, '/debug/pauses?conv_id=fuzz-q')).body.pauses).toEqual([expect.objectContaining({ pause_id, kind: 'question' })]);
      expect(asker.frames.some((frame) => frame.type === 'debugger.resume')).toBe(false);
      expect((await post(q.base, '/debug/continue', { pause_id, action: 'answer', answers: { call_q: { color: 'red', coats: 1 } } })).status).toBe(200);
      expect(await asker.next('run.end')).toMatchObject({ status: 'completed' });
      await asker.close();
    } finally {
      await q.close();
    }
  });
});
