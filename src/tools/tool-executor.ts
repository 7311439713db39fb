import {
  asyncScheduler,
  catchError,
  defer,
  last,
  map,
  Observable,
  of,
  retry,
  throwError,
  timeout,
  timer,
  type SchedulerLike,
} from 'rxjs';
import { argsDigest, ARGS_CHANGED } from '../core/args-digest.js';
import type { ToolCall } from '../core/turns.js';
import type { Tool, ToolErrorPolicy } from './define-tool.js';
import { invokeTool, type Invocation } from './invoke-tool.js';
import { finisherOf, rejected, type Finisher, type ToolProgress } from './tool-outcome.js';
import type { ToolRegistry } from './tool-registry.js';

export { RESULT_TOO_DEEP, type ToolOutcome, type ToolProgress, type ToolRejection } from './tool-outcome.js';

export interface ToolExecutorConfig {
  /** Per-call timeout; the tool's AbortSignal fires when it passes. Default 30 000 ms. */
  readonly timeoutMs?: number;
  /** What a failure does: `continue` (default: an error result the model sees), `retry`, or `abort` the run. */
  readonly policy?: ToolErrorPolicy;
  /** Retries under the `retry` policy. Default 3. */
  readonly maxRetries?: number;
  /** First retry delay; each next one doubles. Default 200 ms. */
  readonly retryBaseDelayMs?: number;
}

const DEFAULT_EXECUTOR_CONFIG = Object.freeze({ timeoutMs: 30_000, policy: 'continue', maxRetries: 3, retryBaseDelayMs: 200 });

/** The tool executor port: the edge where tools' own code runs. */
export interface ToolExecutor {
  /**
   * Cold; never errors (failures are outcomes). Unsubscribing aborts the tool's signal. `approved`: the digest
   * of the arguments a decision approved (docs/protocol.md, Approvals bound to what runs); a call whose
   * arguments digest otherwise is refused, `args_changed`, and nothing of the tool runs.
   */
  execute(call: ToolCall, allowed?: ReadonlySet<string>, approved?: string, children?: ChildRuns): Observable<ToolProgress>;
}

/**
 * Runs an agent tool's call as a child run of the loop (docs/protocol.md, Agents inside agents): the child's final
 * text, once, or an error saying how it ended otherwise. Given by the loop's tools phase, which knows the parent run.
 */
export type ChildRuns = (tool: Tool, args: unknown, call: ToolCall) => Observable<string>;

export class ToolTimeoutError extends Error {
  override readonly name = 'ToolTimeoutError';
}

function positive(name: string, value: number, allowZero: boolean): void {
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw new RangeError(`createToolExecutor: ${name} must be a ${allowZero ? 'non-negative' : 'positive'} number, got ${value}`);
  }
}

/** One attempt's result as an Observable of the tool's last value. */
function resultOf(invocation: Invocation): Observable<unknown> {
  if (invocation.kind === 'value') return of(invocation.value);
  if (invocation.kind === 'error') return throwError(() => invocation.error);
  return invocation.single ? invocation.output$ : invocation.output$.pipe(last(undefined, null));
}

/** What every call of one executor shares: its tools, its checked settings and its clock. */
interface ExecutorContext {
  readonly registry: ToolRegistry;
  readonly settings: ExecutorSettings;
  readonly scheduler: SchedulerLike;
}

interface ExecutorSettings {
  readonly timeoutMs: number;
  readonly policy: ToolErrorPolicy;
  readonly maxRetries: number;
  readonly retryBaseDelayMs: number;
}

export function createToolExecutor(
  registry: ToolRegistry,
  config: ToolExecutorConfig = {},
  scheduler: SchedulerLike = asyncScheduler,
): ToolExecutor {
  const context: ExecutorContext = { registry, settings: checkedSettings(config), scheduler };
  return { execute: (call, allowed, approved, children) => execute$(context, call, allowed, approved, children) };
}

function checkedSettings(config: ToolExecutorConfig): ExecutorSettings {
  const settings = { ...DEFAULT_EXECUTOR_CONFIG, ...config };
  positive('timeoutMs', settings.timeoutMs, false);
  positive('maxRetries', settings.maxRetries, true);
  positive('retryBaseDelayMs', settings.retryBaseDelayMs, true);
  if (!['continue', 'retry', 'abort'].includes(settings.policy)) {
    throw new RangeError(`createToolExecutor: policy must be continue, retry or abort, got "${settings.policy}"`);
  }
  return settings as ExecutorSettings;
}

/** Why the call may not run, or the tool and its validated arguments. */
function admit(registry: ToolRegistry, call: ToolCall, allowed?: ReadonlySet<string>, approved?: string): ToolProgress | { readonly tool: Tool; readonly args: unknown } {
  const tool = registry.get(call.name);
  if (!tool) return rejected(call, 'unknown_tool', `unknown tool "${call.name}"`);
  if (allowed && !allowed.has(call.name)) return rejected(call, 'not_allowed', `tool "${call.name}" is not allowed in this run`);
  // Recomputed here, the last step before the tool runs: what was approved is what runs, or nothing does.
  if (approved !== undefined && argsDigest(call.args) !== approved) return rejected(call, 'args_changed', ARGS_CHANGED);
  const validation = tool.validate(call.args);
  if (!validation.ok) return rejected(call, 'invalid_arguments', `invalid arguments for ${call.name}: ${validation.issues.join('; ')}`);
  return { tool, args: validation.value };
}

// Hand-written rather than `defer(() => concat(of(started), defer(attempt)))`: a synchronous tool
// (the common case) then costs this one subscription instead of six, a large part of what brought
// the loop near a bare RxJS loop's speed. What may take time (timeout, retry, errors as values) is the
// operators' again.
function execute$(context: ExecutorContext, call: ToolCall, allowed?: ReadonlySet<string>, approved?: string, children?: ChildRuns): Observable<ToolProgress> {
  return new Observable<ToolProgress>((subscriber) => {
    const admitted = admit(context.registry, call, allowed, approved);
    if ('type' in admitted) {
      subscriber.next(admitted);
      subscriber.complete();
      return undefined;
    }
    const { tool, args } = admitted;
    const { settings, scheduler } = context;
    const policy = tool.policy ?? settings.policy;
    const startedAt = scheduler.now();
    const finished = finisherOf(scheduler, call, startedAt, policy);
    // `started` goes out before the tool is called, so `tool.delta {exec: true}` precedes anything
    // the tool does. A synchronous answer (or failure, with no retry to make) needs no timer or
    // retry machinery.
    subscriber.next({ type: 'started', args, at: startedAt });
    if (subscriber.closed) return undefined;
    // A child run is timed by its own calls, never as one call, and is not tried again.
    if (tool.agent) return childOutcome$(tool, args, call, finished, children).subscribe(subscriber);
    const first = invokeTool(tool, args, call.id, scheduler);
    if (first.kind === 'value' || (first.kind === 'error' && policy !== 'retry')) {
      subscriber.next(first.kind === 'value' ? finished(first.value) : finished(null, first.error));
      subscriber.complete();
      return undefined;
    }
    return settle$(context, tool, call, args, first, finished).subscribe(subscriber);
  });
}

/** An agent call's outcome: its child run's final text, or the error it ended with, as a value. */
function childOutcome$(tool: Tool, args: unknown, call: ToolCall, finished: Finisher, children?: ChildRuns): Observable<ToolProgress> {
  if (!children) return of(finished(null, new Error(`agent tool "${tool.name}" runs only inside a tool loop`)));
  return children(tool, args, call).pipe(
    last(),
    map((text) => finished(text)),
    catchError((error: unknown) => of(finished(null, error))),
  );
}

/** A call whose first attempt did not answer at once: timeout per attempt, retries, errors as values. */
function settle$(context: ExecutorContext, tool: Tool, call: ToolCall, args: unknown, first: Invocation, finished: Finisher): Observable<ToolProgress> {
  const { settings, scheduler } = context;
  const policy = tool.policy ?? settings.policy;
  const timeoutMs = tool.timeoutMs ?? settings.timeoutMs;
  let attempts = 0;
  // Only a retry makes another attempt (on resubscription); else the first is all there is.
  const attempt$ = policy === 'retry' ? defer(() => resultOf(attempts++ === 0 ? first : invokeTool(tool, args, call.id, scheduler))) : resultOf(first);
  const tried$ = attempt$.pipe(
    // Unsubscribing at the deadline aborts the tool's signal (see invokeTool).
    timeout({
      first: timeoutMs,
      scheduler,
      with: () => throwError(() => new ToolTimeoutError(`tool "${call.name}" timed out after ${timeoutMs} ms`)),
    }),
  );
  const retried$ =
    policy === 'retry'
      ? tried$.pipe(
          retry({
            count: settings.maxRetries,
            delay: (_error, retryCount) => timer(settings.retryBaseDelayMs * 2 ** (retryCount - 1), scheduler),
          }),
        )
      : tried$;
  // Errors are values: the model sees them; only the `abort` policy ends the run.
  return retried$.pipe(
    map((result) => finished(result)),
    catchError((error: unknown) => of(finished(null, error))),
  );
}
