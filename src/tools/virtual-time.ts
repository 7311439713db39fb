import { asyncScheduler, VirtualTimeScheduler, type SchedulerLike } from 'rxjs';

/**
 * How far `asyncScheduler.now()` may drift from `Date.now()` before we call its clock virtual.
 * Outside a test both read `Date.now()`, microseconds apart; inside `TestScheduler.run` the async
 * scheduler reads the test scheduler's frame counter, which starts at 0.
 */
const VIRTUAL_CLOCK_GAP_MS = 60_000;

const isVirtualScheduler = (scheduler: SchedulerLike): boolean =>
  scheduler instanceof VirtualTimeScheduler ||
  // Another copy of rxjs (a user's own) fails instanceof: recognise the class by its shape.
  (typeof (scheduler as Partial<VirtualTimeScheduler>).flush === 'function' &&
    typeof (scheduler as Partial<VirtualTimeScheduler>).frame === 'number' &&
    typeof (scheduler as Partial<VirtualTimeScheduler>).maxFrames === 'number');

/**
 * True when time is virtual: the given scheduler is a `VirtualTimeScheduler` (a `TestScheduler`
 * included), or we run inside `TestScheduler.run` (rxjs-marbles' default), which makes
 * `asyncScheduler` virtual by pointing rxjs's timestamp and timer providers at the test scheduler.
 * Those providers are internal, so we read their public effect: the async scheduler's clock.
 */
export function isVirtualTime(scheduler?: SchedulerLike): boolean {
  if (scheduler !== undefined && isVirtualScheduler(scheduler)) return true;
  return Math.abs(asyncScheduler.now() - Date.now()) > VIRTUAL_CLOCK_GAP_MS;
}

/** What a tool did that virtual time cannot follow. */
export type VirtualTimeMisuse = 'Promise' | 'async iterable';

/** A tool answered with a Promise (or an async iterable) while time is virtual. */
export class VirtualTimePromiseError extends Error {
  override readonly name = 'VirtualTimePromiseError';
  constructor(
    readonly toolName: string,
    returned: VirtualTimeMisuse,
  ) {
    super(
      `tool "${toolName}" returned ${returned === 'Promise' ? 'a Promise' : 'an async iterable'} while running under a virtual-time ` +
        `scheduler; Promises do not advance in virtual time: return an Observable (e.g. timer(ms).pipe(map(() => result))), ` +
        `or wrap the tool with asVirtualTool(tool, { delayMs, result }) from stepwise/testing in tests`,
    );
  }
}

const MESSAGE_MARK = 'while running under a virtual-time scheduler; Promises do not advance in virtual time';

/** True for a tool error message made by {@link VirtualTimePromiseError} (outcomes carry messages, not errors). */
export const isVirtualTimeMisuse = (message: string | undefined): boolean => message?.includes(MESSAGE_MARK) ?? false;
