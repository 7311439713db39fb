import type { Block } from '../../src/core/turns.js';
import { toAnthropicMessages } from '../../src/engines/transcript-anthropic.js';
import { toChatMessages } from '../../src/engines/transcript-openai.js';
import { groupTranscript, parseArgs } from '../../src/engines/transcript.js';

const b = (kind: Block['kind'], payload: unknown): Block => ({ id: `${kind}-${Math.random()}`, kind, payload }) as Block;

describe('transcript grouping', () => {
  const twoSteps: Block[] = [
    b('user', { text: 'go' }),
    b('tool_call', { id: 'a', name: 't', args: { x: 1 } }),
    b('tool_use', { id: 'a', result: 'ok' }),
    b('llm_text', { text: 'again' }),
    b('tool_call', { id: 'b', name: 't', args: '{"x": ' }),
    b('tool_use', { id: 'b', result: null, error: 'invalid arguments' }),
    b('llm_text', { text: 'done' }),
    b('user', { text: 'thanks' }),
    b('user', { text: 'bye' }),
  ];

  it('should group each assistant step with its calls, then its results', () => {
    expect(groupTranscript(twoSteps).groups.map((g) => g.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'user', 'user']);
  });

  it('should keep a raw, unparsable argument string as it came for OpenAI', () => {
    const assistant = toChatMessages(twoSteps).filter((m) => m.role === 'assistant');
    expect(assistant[1]).toMatchObject({ tool_calls: [{ function: { arguments: '{"x": ' } }] });
  });

  it('should alternate roles for Anthropic, merging adjacent user turns', () => {
    const { messages } = toAnthropicMessages(twoSteps);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user']);
    expect(messages[3]!.content).toEqual([
      { type: 'text', text: 'again' },
      { type: 'tool_use', id: 'b', name: 't', input: { raw: '{"x": ' } },
    ]);
    expect(messages[6]!.content).toEqual([{ type: 'text', text: 'thanks' }, { type: 'text', text: 'bye' }]);
  });

  it('should parse empty arguments as an empty object and keep invalid JSON raw', () => {
    expect(parseArgs('')).toEqual({});
    expect(parseArgs('{"a":1}')).toEqual({ a: 1 });
    expect(parseArgs('{"a":')).toBe('{"a":');
  });
});
