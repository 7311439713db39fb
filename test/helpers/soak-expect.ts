import { formatReport, type SoakReport } from '../../bench/soak/index.js';

/**
 * A soak that ran as planned (all its runs, its fault, decisions and observed frames: otherwise "no
 * violation" would prove nothing) and found no violation. The failure message is the harness's table,
 * each violation on a line with its conv_id, pause_id and what happened: the readable diff.
 */
export function expectKeptEveryPromise(report: SoakReport, runs: number): void {
  const table = formatReport(report, 20);
  expect(report.stopped_early, table).toBeUndefined();
  expect(report.runs, table).toBe(runs);
  expect(report.failover, table).toBeDefined();
  expect(report.decisions_acknowledged, table).toBeGreaterThan(0);
  expect(report.observed.frames, table).toBeGreaterThan(0);
  expect(report.violations.length, table).toBe(0);
}
