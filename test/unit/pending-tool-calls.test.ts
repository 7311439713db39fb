import { describe, expect, it } from 'vitest';
import { pendingToolCalls, type Block } from '../../src/core/turns.js';

const call = (id: string, name = 'echo'): Block => ({ id: `b_${id}`, kind: 'tool_call', role: 'assistant', payload: { id, name, args: { id } } });
const use = (id: string): Block => ({ id: `${id}:use`, kind: 'tool_use', role: 'tool', payload: { id, result: null } });
const ids = (blocks: readonly Block[]): string[] => pendingToolCalls(blocks).map((pending) => pending.id);

describe('pendingToolCalls', () => {
  it('should list the calls without a result, in the order they were asked for', () => {
    expect(ids([call('a'), call('b'), call('c'), use('b')])).toEqual(['a', 'c']);
    expect(ids([call('a'), call('b'), call('c'), use('c'), use('a')])).toEqual(['b']);
  });

  it('should find none once every call has its result, over many steps', () => {
    const blocks: Block[] = [{ id: 'u', kind: 'user', role: 'user', payload: { text: 'go' } }];
    for (let step = 0; step < 15; step += 1) blocks.push(call(`s${step}`), use(`s${step}`));
    expect(ids(blocks)).toEqual([]);
    expect(ids([...blocks, call('next_1'), call('next_2')])).toEqual(['next_1', 'next_2']);
  });

  it('should not count a result that came before its call as answering it later', () => {
    expect(ids([use('a'), call('a'), call('b')])).toEqual(['b']);
  });

  it('should keep the payload the call block holds', () => {
    const [only] = pendingToolCalls([call('a', 'get_weather')]);
    expect(only).toEqual({ id: 'a', name: 'get_weather', args: { id: 'a' } });
  });
});
