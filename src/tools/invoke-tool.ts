import { isObservable, type Observable, type ObservableInput } from 'rxjs';
import { abortOnUnsubscribe } from '../core/abortable.js';
import type { Tool } from './define-tool.js';

/** What calling a tool gave back at once. */
export type Invocation =
  | { readonly kind: 'value'; readonly value: unknown }
  | { readonly kind: 'error'; readonly error: unknown }
  /** Unsubscribing before it settles aborts the tool's AbortSignal. */
  | { readonly kind: 'pending'; readonly output$: Observable<unknown> };

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof value === 'object' && value !== null && typeof (value as PromiseLike<unknown>).then === 'function';

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';

/**
 * Calls the tool now. A synchronous answer needs no subscription, timer or signal at all, which is
 * most of a fast tool's cost; the AbortSignal is made only if the tool reads it (an AbortController
 * costs microseconds on Node 20).
 */
export function invokeTool(tool: Tool, args: unknown, toolCallId: string): Invocation {
  let controller: AbortController | undefined;
  const context = {
    tool_call_id: toolCallId,
    get signal(): AbortSignal {
      controller ??= new AbortController();
      return controller.signal;
    },
  };
  let output: unknown;
  try {
    output = tool.execute(args, context);
  } catch (error) {
    return { kind: 'error', error };
  }
  if (!isObservable(output) && !isThenable(output) && !isAsyncIterable(output)) return { kind: 'value', value: output };
  const output$ = abortOnUnsubscribe(output as ObservableInput<unknown>, () =>
    controller?.abort(new Error('aborted: the run was cancelled or the tool timed out')),
  );
  return { kind: 'pending', output$ };
}
