import { z } from 'zod';
import { createScriptedEngine, createStepwise, defineTool, type Stepwise } from '../../src/index.js';
import type { RetentionConfig } from '../../src/sessions/retention.js';
import { createSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const echo = defineTool({ name: 'echo', description: 'echo', parameters: z.object({ text: z.string() }), execute: ({ text }) => ({ text }) });

/**
 * A runtime on a SQLite store in `dataDir` whose runs ask for one `echo` call, then answer "done";
 * pauses wait an hour, so none times out during a test. The recovery tests' first and second process.
 */
export const pausingRuntime = (dataDir: string, retention?: RetentionConfig): Stepwise =>
  createStepwise({
    engine: createScriptedEngine({ responses: [{ tool_calls: [{ name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }] }),
    tools: [echo],
    pauseTimeoutMs: 3_600_000,
    ...(retention ? { retention } : {}),
    store: createSqliteStore({ dataDir }),
  });
