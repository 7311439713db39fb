import { readRssKb } from '../serve-process.js';
import type { Service } from './service.js';

/** Resident memory of the service and of the harness, at the soak's milestones (`memory` of the report). */
export interface SoakMemory {
  /** Each instance's RSS in MB when ready, once every run paused (and had time to hibernate), and at the end. */
  readonly instances_rss_mb: { readonly started: readonly number[]; readonly paused: readonly number[]; readonly end: readonly number[] };
  /** Mean over the instances of (paused - started) RSS / the runs each owned, KB: the server's cost of a paused run. */
  readonly per_paused_run_kb: number;
  /** The harness's own RSS at the end, MB (it holds every decision and, at the end, every log). */
  readonly harness_rss_mb: number;
}

type Milestone = 'started' | 'paused' | 'end';

/**
 * Reads each live instance's VmRSS from /proc/<pid>/status, from outside as `server_rss_per_paused_run`
 * does: a soak at 100 000 runs says what its instances held, not only whether they kept their promises.
 */
export function createMemoryWatch(service: Service) {
  const readings: Record<Milestone, number[]> = { started: [], paused: [], end: [] };
  const rssOf = (index: number): number => {
    const pid = service.instances[index]?.server?.process.pid;
    try {
      return pid === undefined ? NaN : readRssKb(pid);
    } catch {
      // Exited between the look and the read (a kill of the soak's faults).
      return NaN;
    }
  };
  return {
    sample: (milestone: Milestone): void => {
      readings[milestone] = service.instances.map((instance) => rssOf(instance.index));
    },
    summary: (runsPerInstance: readonly number[]): SoakMemory => {
      const grown = readings.paused.map((paused, i) => (paused - (readings.started[i] ?? NaN)) / (runsPerInstance[i] || NaN));
      const measured = grown.filter((value) => Number.isFinite(value));
      const mb = (values: number[]): number[] => values.map((kb) => Math.round(kb / 1024));
      return {
        instances_rss_mb: { started: mb(readings.started), paused: mb(readings.paused), end: mb(readings.end) },
        per_paused_run_kb: measured.length === 0 ? NaN : Math.round((10 * measured.reduce((sum, value) => sum + value, 0)) / measured.length) / 10,
        harness_rss_mb: Math.round(process.memoryUsage().rss / 1048576),
      };
    },
  };
}
