import { runSoak } from '../../bench/soak/index.js';
import { expectKeptEveryPromise } from '../helpers/soak-expect.js';

/**
 * The soak of issue 21 at a small size, inside `npm test` (the full size is `npm run soak`): 200 runs
 * on three `serve --store redis` instances, every pause decided by concurrent operators on random
 * instances, 100 WebSocket observers on non-owners, and one SIGKILL of an owner mid-way. Every promise
 * of docs/protocol.md ("Durability", "WebSocket", "Decisions") that the harness checks from outside
 * must hold.
 */
describe('soak: one service on three instances under load and a kill -9', () => {
  it('should keep every acknowledged decision, run each non-idempotent call at most once, end every run and stream every frame once', async () => {
    const report = await runSoak({ runs: 200, kill: true, timeoutMs: 240_000 });
    expect(report.instances).toBe(3);
    expectKeptEveryPromise(report, 200);
  }, 300_000);
});
