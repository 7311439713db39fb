import type { SchedulerLike, Subscription } from 'rxjs';

/**
 * When a runtime closes finished sessions (`sessions.close`: their turns and buffered events go).
 * Never closed: a running or paused session, and one that someone watches live (a dashboard's
 * WebSocket, a run's `events$`), which would otherwise lose its stream. A session counts as idle
 * from its creation until its first run, and again from the end of each run.
 */
export interface RetentionConfig {
  /** Close a session after this long idle (a watched one is looked at again after as long). Default `Infinity`: never by time. */
  readonly idleMs?: number;
  /**
   * Most sessions kept: opening one, or a run ending, beyond it closes the longest idle ones until
   * the count fits (sessions that may not be closed still count, so the total may exceed it while
   * they run). Default 1000.
   */
  readonly maxSessions?: number;
}

export const DEFAULT_RETENTION = Object.freeze({ idleMs: Number.POSITIVE_INFINITY, maxSessions: 1000 });

export interface RetentionPorts {
  /** Virtual in marble tests: idle deadlines are its timers. */
  readonly scheduler: SchedulerLike;
  /** Closes a session; it calls `forget` for it. */
  readonly close: (convId: string) => boolean;
  /** Whether someone follows the conversation live. */
  readonly isWatched: (convId: string) => boolean;
}

/** The runtime's bookkeeping of idle sessions. */
export interface Retention {
  /** A session started a run (`running`) or became idle (created, or its run ended). */
  observe(convId: string, running: boolean): void;
  /**
   * Closes the longest idle, unwatched sessions until `total` sessions fit under `maxSessions`, but
   * never the newest tenth of `maxSessions` idle ones (running sessions can outnumber the limit).
   */
  makeRoom(total: number): void;
  /** The session was closed: drop its entry and timer. */
  forget(convId: string): void;
  dispose(): void;
}

function checked(config: RetentionConfig): Required<RetentionConfig> {
  const { idleMs, maxSessions } = { ...DEFAULT_RETENTION, ...config };
  if (!(typeof idleMs === 'number' && idleMs > 0)) {
    throw new RangeError(`createStepwise: retention.idleMs must be a positive number of ms or Infinity, got ${String(idleMs)}`);
  }
  if (!(maxSessions === Number.POSITIVE_INFINITY || (Number.isInteger(maxSessions) && maxSessions >= 1))) {
    throw new RangeError(`createStepwise: retention.maxSessions must be a positive integer or Infinity, got ${String(maxSessions)}`);
  }
  return { idleMs, maxSessions };
}

export function createRetention(ports: RetentionPorts, config: RetentionConfig = {}): Retention {
  const { idleMs, maxSessions } = checked(config);
  // Insertion order is idle order: a session that becomes idle again moves to the end.
  const idle = new Map<string, Subscription | undefined>();

  const forget = (convId: string): void => {
    idle.get(convId)?.unsubscribe();
    idle.delete(convId);
  };

  const close = (convId: string): void => {
    forget(convId);
    ports.close(convId);
  };

  // A watched session's clock starts over: it is closed only after idleMs that nobody watched it.
  const arm = (convId: string): void => {
    const timer = Number.isFinite(idleMs)
      ? ports.scheduler.schedule(() => (ports.isWatched(convId) ? (forget(convId), arm(convId)) : close(convId)), idleMs)
      : undefined;
    idle.set(convId, timer);
  };

  return {
    observe: (convId, running) => {
      forget(convId);
      if (!running) arm(convId);
    },
    makeRoom: (total) => {
      // The newest tenth of the limit stays however many sessions are busy: with more running
      // sessions than the limit, every idle one went at each opening, even one a request had just
      // joined and was about to use (a client's join, then its /hydrate or command, found it gone).
      let excess = Math.min(total - maxSessions, idle.size - Math.floor(maxSessions / 10));
      // Called at every opening and every run's end: under the limit it touches nothing, so a large
      // limit with many idle sessions costs no walk of them. Closing deletes the entry being visited,
      // which a Map's iteration allows.
      if (excess <= 0) return;
      for (const convId of idle.keys()) {
        if (ports.isWatched(convId)) continue;
        close(convId);
        if ((excess -= 1) <= 0) return;
      }
    },
    forget,
    dispose: () => {
      for (const convId of [...idle.keys()]) forget(convId);
    },
  };
}
