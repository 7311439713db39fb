import { asyncScheduler, concatMap, defer, NEVER, of, throwError, timer, type Observable, type SchedulerLike } from 'rxjs';
import { z } from 'zod';
import { defineTool, type Tool, type ToolDefinition, type ToolErrorPolicy } from '../tools/define-tool.js';
import { toTool } from '../tools/to-tool.js';

/** What a virtual tool recorded of each call, for assertions. */
export interface VirtualToolCall {
  /** The arguments after the tool's own schema validated them. */
  readonly args: unknown;
  readonly signal: AbortSignal;
  /** When the call started, on the scheduler's clock (virtual inside marbles). */
  readonly at: number;
}

export interface VirtualTool extends Tool {
  /** Every call, in the order they started. */
  readonly calls: readonly VirtualToolCall[];
}

/** A scripted answer: a value, or a function of the validated arguments and the call's 0-based index. */
export type Scripted<Args, T> = T | ((args: Args, index: number) => T);

export interface AsVirtualToolConfig<Args = Record<string, unknown>> {
  /** Virtual time each call takes before it answers. Default 0. */
  readonly delayMs?: number;
  /** What each call returns: a value, or a function of the validated arguments and the call's index. Default `null`. */
  readonly result?: Scripted<Args, object | string | number | boolean | null>;
  /**
   * Makes a call fail with this message (a function may return undefined to let that call succeed,
   * e.g. `(_, i) => (i < 2 ? 'flaky' : undefined)` fails the first two calls). Default: no failure.
   */
  readonly error?: Scripted<Args, string | undefined>;
  /** Never answers, to test timeouts and cancellation (the call's signal is recorded). Default false. */
  readonly hang?: boolean;
  /** The clock that times `delayMs` and `at`. Default `asyncScheduler`, which is virtual inside `TestScheduler.run`. */
  readonly scheduler?: SchedulerLike;
}

const scripted = <Args, T>(value: Scripted<Args, T>, args: Args, index: number): T =>
  typeof value === 'function' ? (value as (args: Args, index: number) => T)(args, index) : value;

/**
 * Stands `tool` in for itself in virtual time: the same name, description, JSON Schema, validation
 * and policy, but `execute` is scripted and runs on RxJS timers, so a marble test drives it exactly.
 * The tool's own `execute` is never called.
 *
 * ```ts
 * const weather = asVirtualTool(getWeather, { delayMs: 50, result: (args) => ({ city: args.city, temp_c: 21 }) });
 * ```
 */
export function asVirtualTool<Args = Record<string, unknown>>(
  tool: Tool | ToolDefinition<Args>,
  config: AsVirtualToolConfig<Args> = {},
): VirtualTool {
  const original = toTool(tool as Tool | ToolDefinition);
  const { delayMs = 0, hang = false, scheduler = asyncScheduler } = config;
  if (!Number.isFinite(delayMs) || delayMs < 0) {
    throw new RangeError(`asVirtualTool(${original.name}): delayMs must be a non-negative number, got ${delayMs}`);
  }
  const calls: VirtualToolCall[] = [];
  const answer = (args: Args, index: number): Observable<unknown> =>
    defer(() => {
      const error = scripted(config.error, args, index);
      if (error !== undefined) return throwError(() => new Error(error));
      return of(scripted(config.result ?? null, args, index));
    });
  const execute = (args: unknown, { signal }: { signal: AbortSignal }): Observable<unknown> => {
    const index = calls.push({ args, signal, at: scheduler.now() }) - 1;
    if (hang) return NEVER;
    const answer$ = answer(args as Args, index);
    return delayMs > 0 ? timer(delayMs, scheduler).pipe(concatMap(() => answer$)) : answer$;
  };
  return { ...original, execute, calls };
}

export interface VirtualToolConfig {
  readonly name?: string;
  /** Virtual time each call takes. Default 0. */
  readonly delayMs?: number;
  /** Never answers (to test timeouts and cancellation). Default false. */
  readonly hang?: boolean;
  /** The first `failTimes` calls fail with `failMessage`. Default 0. */
  readonly failTimes?: number;
  readonly failMessage?: string;
  readonly policy?: ToolErrorPolicy;
  readonly timeoutMs?: number;
}

/**
 * An echo tool that runs on RxJS timers, so it is exact in virtual time: `{text}` in,
 * `{echoed: text}` out after `delayMs`. For your own tools, see {@link asVirtualTool}.
 */
export function createVirtualTool(config: VirtualToolConfig = {}): VirtualTool {
  const { name = 'echo', delayMs = 0, hang = false, failTimes = 0, failMessage = 'virtual tool failure' } = config;
  const echo = defineTool({
    name,
    description: 'Echoes its text back (a virtual-time test tool).',
    parameters: z.object({ text: z.string() }),
    ...(config.policy === undefined ? {} : { policy: config.policy }),
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    execute: (args: { text: string }) => ({ echoed: args.text }),
  });
  return asVirtualTool<{ text: string }>(echo, {
    delayMs,
    hang,
    result: (args) => ({ echoed: args.text }),
    error: (_args, index) => (index < failTimes ? failMessage : undefined),
  });
}
