import { isObservable, type Observable, type ObservableInput, type SchedulerLike } from 'rxjs';
import { abortOnUnsubscribe } from '../core/abortable.js';
import type { Tool, ToolContext } from './define-tool.js';
import { isVirtualTime, VirtualTimePromiseError } from './virtual-time.js';

/** What calling a tool gave back at once. */
export type Invocation =
  | { readonly kind: 'value'; readonly value: unknown }
  | { readonly kind: 'error'; readonly error: unknown }
  /**
   * Unsubscribing before it settles aborts the tool's AbortSignal. `single`: it emits exactly one
   * value (a Promise's), so its last value needs no `last()`.
   */
  | { readonly kind: 'pending'; readonly output$: Observable<unknown>; readonly single: boolean };

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
  const context = new CallContext(toolCallId);
  let output: unknown;
  try {
    output = tool.execute(args, context);
  } catch (error) {
    return { kind: 'error', error };
  }
  if (isObservable(output)) return { kind: 'pending', output$: pending(output, context), single: false };
  if (!isThenable(output) && !isAsyncIterable(output)) return { kind: 'value', value: output };
  if (isVirtualTime(scheduler)) return refuseInVirtualTime(tool, output, context);
  return { kind: 'pending', output$: pending(output as ObservableInput<unknown>, context), single: isThenable(output) };
}

/**
 * A tool call's context. A class, so a call costs one small allocation with its getter on the
 * prototype: an object literal with a getter closing over the controller cost more per call, on the
 * loop's hot path.
 */
class CallContext implements ToolContext {
  #controller: AbortController | undefined;
  constructor(readonly tool_call_id: string) {}
  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }
  /** Aborts the signal, if the tool ever asked for it. */
  abort(reason: Error): void {
    this.#controller?.abort(reason);
  }
}

const pending = (output: ObservableInput<unknown>, context: CallContext): Observable<unknown> =>
  abortOnUnsubscribe(output, () => context.abort(new Error('aborted: the run was cancelled or the tool timed out')));

function refuseInVirtualTime(tool: Tool, output: PromiseLike<unknown> | AsyncIterable<unknown>, context: CallContext): Invocation {
  const error = new VirtualTimePromiseError(tool.name, isThenable(output) ? 'Promise' : 'async iterable');
  context.abort(error);
  // Its eventual rejection is nobody's to handle now; keep it from surfacing as an unhandled one.
  if (isThenable(output)) output.then(undefined, () => undefined);
  return { kind: 'error', error };
}
