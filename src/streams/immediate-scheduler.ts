import { Subscription, type SchedulerAction, type SchedulerLike } from 'rxjs';

/** One scheduled piece of work: on the check phase (`setImmediate`) or, with a delay, on a timer. */
class ImmediateAction<T> extends Subscription implements SchedulerAction<T> {
  private cancel: (() => void) | undefined;

  constructor(private readonly work: (this: SchedulerAction<T>, state?: T) => void) {
    super();
    this.add(() => this.cancel?.());
  }

  schedule(state?: T, delay = 0): Subscription {
    if (this.closed) return this;
    this.cancel?.();
    const run = (): void => {
      this.cancel = undefined;
      this.work(state);
    };
    if (delay > 0) {
      const timer = setTimeout(run, delay);
      this.cancel = () => clearTimeout(timer);
    } else {
      const immediate = setImmediate(run);
      this.cancel = () => clearImmediate(immediate);
    }
    return this;
  }
}

/**
 * Work on Node's next check phase: after the I/O callbacks of this turn and every microtask they
 * queued, before the next timers. RxJS's `asapScheduler` runs on a microtask, so work it was given
 * first runs before promise chains queued after it; a resolved pause's run handed back there took
 * its whole next step before the command that resolved it had answered (its reply waits on several
 * awaits). Handed back here, the reply, local or over Redis, goes out first (docs/protocol.md,
 * Several instances).
 */
export const immediateScheduler: SchedulerLike = {
  now: () => Date.now(),
  schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay = 0, state?: T): Subscription {
    return new ImmediateAction(work).schedule(state, delay);
  },
};
