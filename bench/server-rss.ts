import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { entry, type BenchEntry } from './bench-entry.js';
import type { LoadedLib } from './lib.js';
import { createJsonClient } from './post-json.js';
import { eachBounded, startServe, type ServeProcess } from './serve-process.js';
import { within } from './scenario.js';

/**
 * `server_rss_per_paused_run` (SPEC-level name; docs/protocol.md, Durability): KB of resident memory a
 * `stepwise serve --store sqlite` process grows by per paused run, read from outside in
 * /proc/<pid>/status. The process pauses `warmup` runs first (so lazily loaded modules, JIT code and
 * the SQLite page cache are in the starting figure), then `runs` (100 000) more, each a `POST /chat` in
 * step mode whose first inference asks for a tool: every run pauses at `after_inference`. The figure is
 * taken once the pauses are older than `--hibernate-after-ms` and the RSS has stopped moving for a minute.
 */
export interface ServerRssBenchConfig {
  readonly runs?: number;
  readonly warmup?: number;
  /** Keep-alive sockets, and requests in flight. */
  readonly connections?: number;
  /** Node flags for the server process (e.g. `--heapsnapshot-signal=SIGUSR2` when looking into it). */
  readonly nodeFlags?: readonly string[];
}

const DEFAULT_SERVER_RSS_BENCH = Object.freeze({ runs: 100_000, warmup: 2_000, connections: 32, nodeFlags: [] as readonly string[] });
const HIBERNATE_AFTER_MS = 1000;
const HOUR_MS = 3_600_000;
const SETTLE_SAMPLE_MS = 1000;
const STABLE_MS = 60_000;
const SETTLE_LIMIT_MS = 240_000;

function writeScript(dir: string): string {
  const script = join(dir, 'script.json');
  const ask = { text: 'Checking the weather.', tool_calls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] };
  writeFileSync(script, JSON.stringify({ responses: [ask, { text: 'done' }] }));
  return script;
}

type Client = ReturnType<typeof createJsonClient>;

/** Starts runs `from`..`to` (exclusive) in step mode; resolves when the last of them is listed as paused. */
async function pauseRange(client: Client, from: number, to: number, connections: number): Promise<void> {
  await eachBounded(to - from, connections, async (i) => {
    const body = { prompt: 'weather in Paris?', conv_id: `rss-${from + i}`, overrides: { step_mode: true } };
    const reply = await client.send('POST', '/chat', body);
    if (reply.status !== 200) throw new Error(`server rss bench: POST /chat answered ${reply.status} ${JSON.stringify(reply.body)}`);
  });
  // Runs pause in the order they started, give or take: the last few paused means they all have.
  const last = Array.from({ length: Math.min(50, to - from) }, (_, i) => `rss-${to - 1 - i}`);
  await within(
    (async () => {
      for (const convId of last) {
        for (;;) {
          const reply = await client.send('GET', `/debug/pauses?conv_id=${convId}`);
          if (reply.status === 200 && (reply.body as { pauses: unknown[] }).pauses.length > 0) break;
          await new Promise((done) => setTimeout(done, 50));
        }
      }
    })(),
    120_000,
    'the last runs to pause',
  );
}

/**
 * Waits past the hibernation delay, then until the RSS has moved by less than 1% for `STABLE_MS`: V8
 * gives pages back only when its memory reducer runs, some 10 to 50 s after the allocations stop, and
 * a process holding paused runs for hours is measured after it, not on the plateau before it.
 */
async function settledRss(server: ServeProcess): Promise<number> {
  await new Promise((done) => setTimeout(done, HIBERNATE_AFTER_MS * 3));
  const samples = [server.rssKb()];
  const window = STABLE_MS / SETTLE_SAMPLE_MS;
  while (samples.length < SETTLE_LIMIT_MS / SETTLE_SAMPLE_MS) {
    await new Promise((done) => setTimeout(done, SETTLE_SAMPLE_MS));
    samples.push(server.rssKb());
    const recent = samples.slice(-window);
    if (recent.length === window && Math.max(...recent) - Math.min(...recent) < 0.01 * Math.max(...recent)) break;
  }
  return samples.at(-1) as number;
}

export async function runServerRssBenchmark(
  loaded: LoadedLib,
  dataRoot: string,
  config: ServerRssBenchConfig = {},
): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  const { runs, warmup, connections, nodeFlags } = { ...DEFAULT_SERVER_RSS_BENCH, ...config };
  mkdirSync(dataRoot, { recursive: true });
  const flags = [
    '--port', '0', '--debug', '--store', 'sqlite', '--data-dir', join(dataRoot, 'data'), '--engine', 'scripted', '--script', writeScript(dataRoot),
    '--pause-timeout-ms', String(HOUR_MS), '--hibernate-after-ms', String(HIBERNATE_AFTER_MS),
  ];
  const server = await startServe(new URL('cli/main.js', loaded.srcUrl).href, flags, nodeFlags);
  const client = createJsonClient(server.base, connections);
  try {
    const atStart = server.rssKb();
    await pauseRange(client, 0, warmup, connections);
    const before = await settledRss(server);
    const started = Date.now();
    await pauseRange(client, warmup, warmup + runs, connections);
    const startMs = Date.now() - started;
    const peak = server.rssKb();
    const after = await settledRss(server);
    const perRun = (after - before) / runs;
    return {
      entries: [entry('server_rss_per_paused_run', perRun, 'KB')],
      notes: [
        `server_rss_per_paused_run: RSS ${Math.round(atStart / 1024)} MB at start, ${Math.round(before / 1024)} MB with ${warmup} paused, ` +
          `${Math.round(peak / 1024)} MB when ${runs} more had paused (${Math.round(startMs / 1000)} s over ${connections} connections), ` +
          `${Math.round(after / 1024)} MB once hibernated: ${perRun.toFixed(2)} KB per paused run`,
      ],
    };
  } finally {
    client.close();
    await server.stop();
  }
}
