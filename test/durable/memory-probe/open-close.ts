// `node --expose-gc --import tsx open-close.ts DIR COUNT`: opens, runs and closes COUNT conversations on a SQLite
// store in DIR, and prints the heap (after a full GC) once warmed up and at the end, as JSON. Run by
// test/durable/memory-bound.test.ts.
import { createScriptedEngine } from '../../../src/engines/scripted.js';
import { createStepwise } from '../../../src/sessions/runtime.js';
import { createSqliteStore } from '../../../src/store/index.js';

const [dir = './data', countText = '1000'] = process.argv.slice(2);
const count = Number(countText);
const store = createSqliteStore({ path: dir });
const stepwise = createStepwise({
  engine: createScriptedEngine({ responses: [{ text: 'Hello there, this is a short answer.' }] }),
  store,
  tracer: null,
  retention: { idleMs: Infinity, maxSessions: 100 },
});
const gc = globalThis.gc as () => void;
const heap = (): number => {
  for (let i = 0; i < 4; i += 1) gc();
  return process.memoryUsage().heapUsed;
};
const converse = async (i: number): Promise<void> => {
  const session = stepwise.sessions.open({ conv_id: `c${i}` });
  await session.start({ prompt: `hello ${i}` }).result();
  stepwise.sessions.close(session.conv_id);
  // As between a server's requests: the store commits what was queued (it batches a tick's writes).
  await new Promise((next) => setImmediate(next));
};
const warmup = Math.min(10_000, Math.floor(count / 10));
for (let i = 0; i < warmup; i += 1) await converse(i);
await store.flush();
const before = heap();
for (let i = warmup; i < count; i += 1) await converse(i);
await store.flush();
const after = heap();
// A closed conversation opened again goes on from its stored log.
const again = stepwise.sessions.open({ conv_id: 'c0' });
await again.start({ prompt: 'again' }).result();
await store.flush();
const lastSeq = await store.lastSeq('c0');
stepwise.dispose();
await store.close();
process.stdout.write(JSON.stringify({ before, after, conversations: count - warmup, lastSeq }));
