import { marbles } from 'rxjs-marbles/jest';
import { catchError, lastValueFrom, map, of, toArray } from 'rxjs';
import { chunkText, createScriptedEngine, parseScript, type EngineError, type InferenceRequest } from '../../src/index.js';

const request = (conv_id = 'c1'): InferenceRequest => ({ conv_id, session_id: 's', inference_id: 'i', turn_id: 't', blocks: [], tools: [] });
const kinds = map((e: { type: string; delta?: string }) => (e.type === 'text-delta' ? e.delta : e.type));

describe('createScriptedEngine', () => {
  it('should stream text in several deltas after the delay, one chunk delay apart', marbles((m) => {
    const engine = createScriptedEngine({ responses: [{ text: 'one two three', delay_ms: 10 }], chunk_delay_ms: 5 });
    m.expect(engine.infer(request()).pipe(kinds)).toBeObservable('10ms a 4ms b 4ms (cf|)', { a: 'one ', b: 'two ', c: 'three', f: 'finished' });
  }));

  it('should emit tool calls with given or generated ids, then finish with stop reason tool_calls', async () => {
    const engine = createScriptedEngine({ responses: [{ tool_calls: [{ name: 'echo', arguments: { text: 'a' } }, { id: 'mine', name: 'echo', arguments: {} }] }] });
    const events = await lastValueFrom(engine.infer(request()).pipe(toArray()));
    expect(events).toMatchObject([
      { type: 'tool-call', id: 'call_1_1', name: 'echo', args: { text: 'a' } },
      { type: 'tool-call', id: 'mine' },
      { type: 'finished', model: 'scripted', stop_reason: 'tool_calls' },
    ]);
  });

  it('should fail an inference with the scripted error after its delay', marbles((m) => {
    const engine = createScriptedEngine({ responses: [{ error: 'rate limited', delay_ms: 3 }] });
    // Errors are compared by name, message and code, not by stack.
    const failure = engine.infer(request()).pipe(catchError((e: EngineError) => of({ name: e.name, message: e.message, code: e.code })));
    m.expect(failure).toBeObservable('3ms (e|)', { e: { name: 'EngineError', message: 'rate limited', code: 'scripted_error' } });
  }));

  it('should consume responses in order per conversation and fail clearly when exhausted', async () => {
    const engine = createScriptedEngine({ responses: [{ text: 'first' }, { text: 'second' }] });
    const text = async (conv: string) => (await lastValueFrom(engine.infer(request(conv)).pipe(toArray()))).flatMap((e) => (e.type === 'text-delta' ? [e.delta] : [])).join('');
    expect(await text('a')).toBe('first');
    expect(await text('b')).toBe('first');
    expect(await text('a')).toBe('second');
    await expect(text('a')).rejects.toMatchObject({ code: 'script_exhausted', message: expect.stringMatching(/exhausted.*2 responses.*#3/) });
  });

  it('should name every offending field of a bad script', () => {
    expect(() => parseScript({ responses: [{ text: 3 }], chunk_delay_ms: -1 })).toThrow(/responses\.0\.text.*chunk_delay_ms/);
    expect(() => parseScript({})).toThrow(/responses/);
  });

  it('should split text into word-sized chunks that join back', () => {
    expect(chunkText('Hello there, world')).toEqual(['Hello ', 'there, ', 'world']);
    expect(chunkText('')).toEqual([]);
  });
});
