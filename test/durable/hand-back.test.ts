import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createScriptedEngine, createSequentialIds, createStepwise, defineTool, type PauseInfo, type Stepwise, type StepwiseEvent } from '../../src/index.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text.',
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => ({ text }),
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function pausedRun(): Promise<{ sw: Stepwise; events: StepwiseEvent[]; pause: PauseInfo; flush: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-hand-back-'));
  const store = createSqliteStore({ dataDir: dir });
  const sw = createStepwise({
    engine: createScriptedEngine({ responses: [{ text: 'calling', tool_calls: [{ id: 'call_1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }] }),
    tools: [echo],
    ids: createSequentialIds(),
    store,
  });
  cleanups.push(async () => {
    sw.dispose();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const events: StepwiseEvent[] = [];
  sw.hub.events$.subscribe(({ event }) => events.push(event));
  const session = sw.sessions.open({ conv_id: 'c' });
  sw.controller.enable(session.session_id);
  session.start({ prompt: 'go' });
  for (let tries = 0; tries < 200 && sw.controller.pending().length === 0; tries += 1) await new Promise((done) => setTimeout(done, 5));
  const [pause] = sw.controller.pending();
  if (!pause) throw new Error('the run did not pause');
  return { sw, events, pause, flush: () => store.flush() };
}

describe('a resolved pause on a durable store (docs/protocol.md, Durability)', () => {
  it('should hand its run back on a task after the decision is committed, not on a microtask, so the command answers first', async () => {
    const { sw, events, pause, flush } = await pausedRun();
    expect(sw.controller.submit({ pause_id: pause.pause_id, action: 'continue' }).ok).toBe(true);
    const resumed = events.findIndex((event) => event.type === 'resumed');
    expect(resumed).toBeGreaterThanOrEqual(0);
    // What a command does once committed: its reply takes many promise hops (route, port, handler).
    await flush();
    for (let hop = 0; hop < 100; hop += 1) await Promise.resolve();
    expect(events.slice(resumed + 1)).toEqual([]);
    // The run goes on by itself on the next task.
    await new Promise((done) => setImmediate(done));
    expect(events.slice(resumed + 1).length).toBeGreaterThan(0);
  });
});
