// `node --expose-gc --import tsx encoder.ts DIR COUNT with|without`: publishes one inference's frames for each of COUNT
// conversations through a frame log on a SQLite store in DIR, with or without the server's frame encoder following it,
// and prints the heap (after a full GC) at the end, as JSON. Run by test/durable/encoder-memory.test.ts.
import { createFrameEncoder } from '../../../src/server/frame-encoder.js';
import { createEvent } from '../../../src/streams/events.js';
import { createEventHub } from '../../../src/streams/event-hub.js';
import { createFrameLog } from '../../../src/streams/frame-log.js';
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js';

const [dir = './data', countText = '1000', mode = 'with'] = process.argv.slice(2);
const count = Number(countText);
const store = createSqliteStore({ dataDir: dir });
const hub = createEventHub();
const frames = createFrameLog(hub, store);
const encoder = mode === 'with' ? createFrameEncoder(frames.events$, store) : undefined;
const gc = globalThis.gc as () => void;
const heap = (): number => {
  for (let i = 0; i < 4; i += 1) gc();
  return process.memoryUsage().heapUsed;
};
for (let i = 0; i < count; i += 1) {
  const run = { conv_id: `c${i}`, session_id: `s${i}`, inference_id: `inf_${i}`, turn_id: `t${i}` };
  hub.publish(createEvent('inference-started', run, 0, { model: 'm' }));
  hub.publish(createEvent('text-delta', run, 0, { delta: 'hi', cumulative: 'hi' }));
  // A conversation that hibernated or closed gives up its buffer: what stays is what the wire keeps.
  if (i % 500 === 499) {
    await store.flush();
    await new Promise((next) => setImmediate(next));
    for (let j = i - 499; j <= i; j += 1) (hub.forget(`c${j}`), frames.forget(`c${j}`));
  }
}
await store.flush();
console.log(JSON.stringify({ heap: heap(), encoder: encoder !== undefined }));
encoder?.dispose();
frames.dispose();
await store.close();
