import { marbles } from 'rxjs-marbles/jest';
import { map, timer } from 'rxjs';
import { z } from 'zod';
import { createToolExecutor, createToolRegistry, defineTool, type ToolExecutorConfig } from '../../src/index.js';
import { toolOf } from './helpers.js';

/** `s` when the call started, then `r` for a result or `e` for an error result. */
const progressOf = map((progress: { type: string; outcome?: { error?: string } }) =>
  progress.type === 'started' ? 's' : progress.outcome?.error === undefined ? 'r' : 'e',
);

/** An executor of one tool, `slow`, whose every call is `stream`. */
const executorFor = (stream: Parameters<typeof toolOf>[1], config: ToolExecutorConfig = {}) =>
  createToolExecutor(createToolRegistry([toolOf('slow', stream)]), config);
const slowCall = { id: 'call_1', name: 'slow', args: {} };

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

  it('should unsubscribe from a tool when it completes', marbles((m) => {
    const tool = m.cold('--a-(b|)', { a: 'partial', b: 'done' });
    m.expect(executorFor(tool).execute(slowCall).pipe(progressOf)).toBeObservable('s---(r|)');
    m.expect(tool).toHaveSubscriptions('^---!');
  }));

  it('should unsubscribe from a tool that errors, and subscribe again for each retry', marbles((m) => {
    const tool = m.cold('--#', {}, new Error('flaky'));
    const executor = executorFor(tool, { policy: 'retry', maxRetries: 2, retryBaseDelayMs: 1 });
    m.expect(executor.execute(slowCall).pipe(progressOf)).toBeObservable('s--------(e|)');
    m.expect(tool).toHaveSubscriptions(['^-!', '---^-!', '-------^-!']);
  }));

  it('should unsubscribe from a tool that times out', marbles((m) => {
    const tool = m.cold('------(b|)', { b: 'late' });
    m.expect(executorFor(tool, { timeoutMs: 3 }).execute(slowCall).pipe(progressOf)).toBeObservable('s--(e|)');
    m.expect(tool).toHaveSubscriptions('^--!');
  }));

  it('should unsubscribe from a tool when unsubscribed (its run cancelled)', marbles((m) => {
    const tool = m.cold('------(b|)', { b: 'late' });
    m.expect(executorFor(tool).execute(slowCall).pipe(progressOf), '^--!').toBeObservable('s--');
    m.expect(tool).toHaveSubscriptions('^--!');
  }));

  it('should give a result nested deeper than 128 levels as the error "result nested too deeply", however deep, and cut a cycle as before', () => {
    const nested = (levels: number): unknown => {
      let value: unknown = 1;
      for (let level = 0; level < levels; level += 1) value = { a: value };
      return value;
    };
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic['self'] = cyclic;
    const outcomes = [200, 5000, 50_000, 0].map((levels) => {
      const tool = defineTool({ name: 'deep', description: 'returns a nested value', parameters: z.object({}), execute: () => (levels === 0 ? cyclic : nested(levels)) });
      let outcome: { result: unknown; error?: string } | undefined;
      createToolExecutor(createToolRegistry([tool]))
        .execute({ id: 'call_1', name: 'deep', args: {} })
        .subscribe((progress) => progress.type === 'finished' && (outcome = progress.outcome));
      return outcome;
    });
    for (const outcome of outcomes.slice(0, 3)) expect(outcome).toMatchObject({ result: null, error: 'result nested too deeply' });
    expect(outcomes[3]).toMatchObject({ result: { name: 'loop', self: '[circular]' } });
    expect(outcomes[3]?.error).toBeUndefined();
  });
});
