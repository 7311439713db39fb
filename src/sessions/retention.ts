import type { SchedulerLike, Subscription } from 'rxjs';

/**
 * When a runtime closes finished sessions (`sessions.close`: their turns and buffered events go).
 * A running or paused session is never closed; a session counts as idle from its creation until
 * its first run, and again from the end of each run.
 */
export interface RetentionConfig {
  /** Close a session after this long idle. Default `Infinity`: never by time. */
  readonly idleMs?: number;
  /**
   * Most sessions kept; opening or finishing one beyond it closes the longest idle ones until the count
   * fits (running ones still count, so the total may exceed it while they run). Default 1000.
   */
  readonly maxSessions?: number;
}

export const DEFAULT_RETENTION = Object.freeze({ idleMs: Number.POSITIVE_INFINITY, maxSessions: 1000 });

export interface RetentionPorts {
  /** Virtual in marble tests: idle deadlines are its timers. */
  readonly scheduler: SchedulerLike;
  /** How many sessions the runtime holds now. */
  readonly count: () => number;
  /** Closes a session; it calls `forget` for it. */
  readonly close: (convId: string) => boolean;
}

/** The runtime's bookkeeping of idle sessions. */
export interface Retention {
  /** A session started a run (`running`) or became idle (created, or its run ended). */
  observe(convId: string, running: boolean): void;
  /** Closes the longest idle sessions until `total` sessions fit under `maxSessions`. */
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

  const makeRoom = (total: number): void => {
    let count = total;
    while (count > maxSessions) {
      const oldest = idle.keys().next();
      if (oldest.done) return;
      forget(oldest.value);
      ports.close(oldest.value);
      count -= 1;
    }
  };

  return {
    observe: (convId, running) => {
      forget(convId);
      if (running) return;
      const timer = Number.isFinite(idleMs) ? ports.scheduler.schedule(() => ports.close(convId), idleMs) : undefined;
      idle.set(convId, timer);
      makeRoom(ports.count());
    },
    makeRoom,
    forget,
    dispose: () => {
      for (const convId of [...idle.keys()]) forget(convId);
    },
  };
}
