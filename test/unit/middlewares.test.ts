import { map, of } from 'rxjs';
import { lastValueFrom, toArray } from 'rxjs';
import { reorderToolResults, systemPrompt, withMiddlewares, type Block, type Engine, type EngineMiddleware, type InferenceRequest } from '../../src/index.js';

const request = (blocks: Block[]): InferenceRequest => ({ conv_id: 'c', session_id: 's', inference_id: 'i', turn_id: 't', blocks, tools: [] });
const recorder = (seen: InferenceRequest[]): Engine => ({ name: 'rec', model: 'rec', infer: (r) => (seen.push(r), of({ type: 'text-delta', delta: 'x' } as const)) });

describe('engine middlewares', () => {
  it('should read [A, B, C] as A wraps B wraps C wraps the engine', async () => {
    const order: string[] = [];
    const tag = (name: string): EngineMiddleware => (engine) => ({
      ...engine,
      infer: (r) => {
        order.push(`${name} in`);
        return engine.infer(r).pipe(map((e) => (order.push(`${name} out`), e)));
      },
    });
    const engine = withMiddlewares(recorder([]), [tag('A'), tag('B'), tag('C')]);
    await lastValueFrom(engine.infer(request([])).pipe(toArray()));
    expect(order).toEqual(['A in', 'B in', 'C in', 'C out', 'B out', 'A out']);
  });

  it('should prepend a system prompt once', async () => {
    const seen: InferenceRequest[] = [];
    const engine = withMiddlewares(recorder(seen), [systemPrompt('be kind'), systemPrompt('ignored')]);
    await lastValueFrom(engine.infer(request([{ id: 'u', kind: 'user', payload: { text: 'hi' } }])));
    expect(seen[0]?.blocks.map((b) => b.kind)).toEqual(['system', 'user']);
    expect(seen[0]?.blocks[0]?.payload).toEqual({ text: 'be kind' });
  });

  it('should move tool results right after the calls they answer', async () => {
    const seen: InferenceRequest[] = [];
    const call = (id: string): Block => ({ id, kind: 'tool_call', payload: { id, name: 'echo', args: {} } });
    const use = (id: string): Block => ({ id: `${id}:use`, kind: 'tool_use', payload: { id, result: id } });
    const text: Block = { id: 't', kind: 'llm_text', payload: { text: 'between' } };
    const engine = withMiddlewares(recorder(seen), [reorderToolResults()]);
    await lastValueFrom(engine.infer(request([call('a'), call('b'), text, use('b'), use('a')])));
    expect(seen[0]?.blocks.map((b) => b.id)).toEqual(['a', 'b', 'a:use', 'b:use', 't']);
  });
});
