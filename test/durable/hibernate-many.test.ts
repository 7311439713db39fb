import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createScriptedEngine, createStepwise, defineTool, type PauseInfo, type Stepwise } from '../../src/index.js';
import type { Store } from '../../src/core/store.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const RUNS = 2000;
const HIBERNATE_AFTER_MS = 100;

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text.',
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ text }),
});

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** A SQLite store counting hibernation's checkpoint reads: one per pause that left memory. */
function countingStore(dir: string): { store: Store; reads: () => number } {
  const store = createSqliteStore({ dataDir: dir });
  let reads = 0;
  const checkpoints: Store['checkpoints'] = (convId) => ((reads += 1), store.checkpoints(convId));
  return { store: Object.assign(Object.create(store) as Store, { checkpoints }), reads: () => reads };
}

function runtimeOn(store: Store, pauseTimeoutMs: number): Stepwise {
  const engine = createScriptedEngine({ responses: [{ text: 'calling', tool_calls: [{ id: 'call_1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }] });
  return createStepwise({ engine, tools: [echo], store, pauseTimeoutMs, hibernateAfterMs: HIBERNATE_AFTER_MS, retention: { maxSessions: RUNS + 100 } });
}

async function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

const byId = (pauses: readonly PauseInfo[]): Array<[string, string, number]> =>
  pauses.map((pause): [string, string, number] => [pause.pause_id, pause.conv_id, pause.deadline_ms]).sort((a, b) => a[0].localeCompare(b[0]));

/**
 * Many hibernated pauses on one SQLite store (docs/protocol.md, Durability): the runtime is stopped
 * with all of them hibernated, a new one recovers them hibernated (no run built, no checkpoint read
 * again), and their deadlines pass together: each resolves as `timeout` no earlier than its
 * deadline, and every run goes on.
 */
describe(`${RUNS} hibernated pauses across a restart`, () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'stepwise-hibernate-many-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('should list every one after the restart with its id and deadline, resolve each at its deadline, and go on with every run', async () => {
    const first = countingStore(dir);
    const before = runtimeOn(first.store, 8_000);
    for (let i = 0; i < RUNS; i += 1) {
      const session = before.sessions.open({ conv_id: `c${i}` });
      before.controller.enable(session.session_id);
      session.start({ prompt: 'go' });
    }
    const paused = byId(before.controller.pending());
    expect(paused).toHaveLength(RUNS);
    await until(() => first.reads() >= RUNS, 'every pause to hibernate');
    await before.suspend();
    await first.store.close();

    const second = countingStore(dir);
    const after = runtimeOn(second.store, 8_000);
    const resumed: Array<{ reason: string; late: number }> = [];
    const deadlines = new Map(paused.map(([id, , deadline]) => [id, deadline]));
    const watching = after.hub.events$.subscribe(({ event }) => {
      const deadline = event.type === 'resumed' ? deadlines.get(event.pause_id) : undefined;
      if (event.type === 'resumed' && deadline !== undefined) resumed.push({ reason: event.reason, late: Date.now() - deadline });
    });
    expect(await after.recover()).toEqual({ conversations: RUNS, runs: RUNS, pauses: RUNS });
    expect(byId(after.controller.pending())).toEqual(paused);
    // Restored hibernated: no run was built, so none hibernates later, and no checkpoint is read again.
    await sleep(HIBERNATE_AFTER_MS * 3);
    expect(second.reads()).toBe(0);
    expect(byId(after.controller.pending())).toEqual(paused);

    await until(() => resumed.length === RUNS, 'every deadline');
    expect(resumed.filter(({ reason, late }) => reason !== 'timeout' || late < 0)).toEqual([]);
    watching.unsubscribe();
    await until(() => after.controller.pending().filter((pause) => pause.phase === 'after_tools').length === RUNS, 'every run to pause after its tool');
    expect(new Set(after.controller.pending().map((pause) => pause.conv_id)).size).toBe(RUNS);
    after.dispose();
    await second.store.close();
  }, 120_000);
});
