import { asyncScheduler, concatMap, NEVER, of, throwError, timer, type Observable } from 'rxjs';
import { z } from 'zod';
import { defineTool, type Tool, type ToolErrorPolicy } from '../tools/define-tool.js';

/** What a virtual tool recorded of each call, for assertions. */
export interface VirtualToolCall {
  readonly args: unknown;
  readonly signal: AbortSignal;
  /** When the call started, on the (virtual inside marbles) async scheduler's clock. */
  readonly at: number;
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

export interface VirtualTool extends Tool {
  /** Every call, in the order they started. */
  readonly calls: readonly VirtualToolCall[];
}

/**
 * An echo tool that runs on RxJS timers, so it is exact in virtual time: `{text}` in,
 * `{echoed: text}` out after `delayMs`.
 */
export function createVirtualTool(config: VirtualToolConfig = {}): VirtualTool {
  const calls: VirtualToolCall[] = [];
  const { name = 'echo', delayMs = 0, hang = false, failTimes = 0, failMessage = 'virtual tool failure' } = config;
  const tool = defineTool({
    name,
    description: 'Echoes its text back (a virtual-time test tool).',
    parameters: z.object({ text: z.string() }),
    ...(config.policy === undefined ? {} : { policy: config.policy }),
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    execute: (args, { signal }): Observable<unknown> => {
      calls.push({ args, signal, at: asyncScheduler.now() });
      if (hang) return NEVER;
      const failing = calls.length <= failTimes;
      const answer$ = failing ? throwError(() => new Error(failMessage)) : of({ echoed: args.text });
      return delayMs > 0 ? timer(delayMs).pipe(concatMap(() => answer$)) : answer$;
    },
  });
  return Object.assign(tool, { calls });
}
