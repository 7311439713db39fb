import { isObservable, type Observable, type ObservableInput, type SchedulerLike } from 'rxjs';
import { abortOnUnsubscribe } from '../core/abortable.js';
import type { Tool } from './define-tool.js';
import { isVirtualTime, VirtualTimePromiseError } from './virtual-time.js';

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
 *
 * Under virtual time (a `TestScheduler`, or inside `TestScheduler.run`) a Promise or async iterable
 * fails the call at once with a {@link VirtualTimePromiseError} saying what to do instead: it could
 * only settle after the test's synchronous flush, so the call would otherwise sit until its timeout.
 */
export function invokeTool(tool: Tool, args: unknown, toolCallId: string, scheduler?: SchedulerLike): Invocation {
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
  if (isObservable(output)) return { kind: 'pending', output$: pending(output, () => controller) };
  if (!isThenable(output) && !isAsyncIterable(output)) return { kind: 'value', value: output };
  if (isVirtualTime(scheduler)) return refuseInVirtualTime(tool, output, () => controller);
  return { kind: 'pending', output$: pending(output as ObservableInput<unknown>, () => controller) };
}

const pending = (output: ObservableInput<unknown>, controller: () => AbortController | undefined): Observable<unknown> =>
  abortOnUnsubscribe(output, () => controller()?.abort(new Error('aborted: the run was cancelled or the tool timed out')));

function refuseInVirtualTime(tool: Tool, output: PromiseLike<unknown> | AsyncIterable<unknown>, controller: () => AbortController | undefined): Invocation {
  const error = new VirtualTimePromiseError(tool.name, isThenable(output) ? 'Promise' : 'async iterable');
  controller()?.abort(error);
  // Its eventual rejection is nobody's to handle now; keep it from surfacing as an unhandled one.
  if (isThenable(output)) output.then(undefined, () => undefined);
  return { kind: 'error', error };
}
