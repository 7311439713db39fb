import { marbles } from 'rxjs-marbles/jest';
import { map, timer } from 'rxjs';
import { z } from 'zod';
import { createToolExecutor, createToolRegistry, defineTool } from '../../src/index.js';

describe('createToolExecutor', () => {
  it('should emit started before the tool is called, then finished', marbles((m) => {
    const order: string[] = [];
    const tool = defineTool({
      name: 'mark',
      description: 'records that it ran',
      parameters: z.object({}),
      execute: () => {
        order.push('tool ran');
        return timer(3).pipe(map(() => 'done'));
      },
    });
    const executor = createToolExecutor(createToolRegistry([tool]));
    const progress$ = executor.execute({ id: 'call_1', name: 'mark', args: {} }).pipe(
      map((progress) => {
        order.push(progress.type);
        return progress.type === 'started' ? 's' : 'f';
      }),
    );
    m.expect(progress$).toBeObservable('s--(f|)');
    m.flush();
    expect(order).toEqual(['started', 'tool ran', 'finished']);
  }));

  it('should emit started before a synchronous tool runs', () => {
    const order: string[] = [];
    const tool = defineTool({ name: 'now', description: 'sync', parameters: z.object({}), execute: () => (order.push('tool ran'), 1) });
    createToolExecutor(createToolRegistry([tool]))
      .execute({ id: 'call_1', name: 'now', args: {} })
      .subscribe((progress) => order.push(progress.type));
    expect(order).toEqual(['started', 'tool ran', 'finished']);
  });
});
