import { runSoak } from '../../bench/soak/index.js';
import { expectKeptEveryPromise } from '../helpers/soak-expect.js';

/**
 * The soak on the default store at a small size, inside `npm test` (the full size is `npm run soak --
 * --store sqlite`): 300 runs on one `serve --store sqlite` process, every pause decided by concurrent
 * operators, 100 WebSocket observers, and one SIGKILL mid-way followed by a restart on the same data
 * dir. Every promise the harness checks from outside (docs/protocol.md, "Durability", "WebSocket",
 * "Decisions") must hold across the restart.
 */
describe('soak: one SQLite server under load and a kill -9', () => {
  it('should keep every acknowledged decision across the restart, run each non-idempotent call at most once, end every run and stream every frame once', async () => {
    const report = await runSoak({ store: 'sqlite', runs: 300, kill: true, timeoutMs: 180_000 });
    expect(report.instances).toBe(1);
    expectKeptEveryPromise(report, 300);
  }, 240_000);
});
