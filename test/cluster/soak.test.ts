import { formatReport, runSoak } from '../../bench/soak/index.js';

/**
 * The soak of issue 21 at a small size, inside `npm test` (the full size is `npm run soak`): 200 runs
 * on three `serve --store redis` instances, every pause decided by concurrent operators on random
 * instances, 100 WebSocket observers on non-owners, and one SIGKILL of an owner mid-way. Every promise
 * of docs/protocol.md ("Durability", "WebSocket", "Decisions") that the harness checks from outside
 * must hold: the failure message is the harness's table, with each violation's conv_id, pause_id and
 * what happened.
 */
describe('soak: one service on three instances under load and a kill -9', () => {
  it('should keep every acknowledged decision, run each non-idempotent call at most once, end every run and stream every frame once', async () => {
    const report = await runSoak({ runs: 200, kill: true, timeoutMs: 240_000 });

    const table = formatReport(report, 20);

    // The soak itself ran as planned: otherwise "no violation" would prove nothing.
    expect(report.stopped_early, table).toBeUndefined();
    expect(report.runs, table).toBe(200);
    expect(report.failover, table).toBeDefined();
    expect(report.decisions_acknowledged, table).toBeGreaterThan(0);
    expect(report.observed.frames, table).toBeGreaterThan(0);

    // The count, not the array: the message (the table, each violation on a line) is the readable diff.
    expect(report.violations.length, table).toBe(0);
  }, 300_000);
});
