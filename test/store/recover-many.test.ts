import { describe, expect, it } from 'vitest';
import type { Stepwise } from '../../src/index.js';
import { useTempDir } from './fixtures.js';
import { pausingRuntime } from './paused-runtime.js';

/**
 * A restart with more paused runs than the runtime keeps idle sessions (`retention.maxSessions`):
 * every run comes back paused with its pause id, none is closed to make room before it resumed
 * (bench `restart_recover` stores 10 000 against the default 1000).
 */
describe('recovery of more paused runs than retention.maxSessions', () => {
  const dirOf = useTempDir();
  const runtime = (dataDir: string): Stepwise => pausingRuntime(dataDir, { maxSessions: 3 });

  it('pauses every run again, with its stored pause id', async () => {
    const dataDir = dirOf();
    const first = runtime(dataDir);
    for (let i = 0; i < 8; i += 1) {
      const session = first.sessions.open();
      first.controller.enable(session.session_id);
      session.start({ prompt: 'go' });
    }
    const pauseIds = first.controller
      .pending()
      .map((pause) => pause.pause_id)
      .sort();
    expect(pauseIds).toHaveLength(8);
    await first.suspend();
    await first.store.close();

    const second = runtime(dataDir);
    try {
      expect(await second.recover()).toEqual({ conversations: 8, runs: 8, pauses: 8 });
      expect(
        second.controller
          .pending()
          .map((pause) => pause.pause_id)
          .sort(),
      ).toEqual(pauseIds);
      expect(second.sessions.list().filter((session) => session.running)).toHaveLength(8);
    } finally {
      second.dispose();
      await second.store.close();
    }
  });
});
