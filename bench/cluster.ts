import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { hasRedisServer, startRedisServer } from '../test/helpers/redis-server.js';
import { ensureBuilt, startCli, type CliServer } from '../test/helpers/server-cli.js';
import { entry, median, percentile, type BenchEntry } from './bench-entry.js';
import { createJsonPoster } from './post-json.js';

/**
 * One service on two instances (README.md, Benchmarks; docs/protocol.md, Several instances): two real `serve --store
 * redis` processes (the built dist) on a real `redis-server` started here (free port, temp dir), clients in this
 * process.
 * - `cluster_resume`: a run on A in step mode, a WebSocket on B; from posting continue to B to the
 *   next frame of that run seen on B (the continue is delivered to A over Redis, its frames come
 *   back through the stream); median.
 * - `cluster_fanout`: frames/s of a run on A delivered to 10 clients on B, until each got `run.end`;
 *   baseline: the same clients on A, for the same kind of run.
 * - `failover`: from `kill -9` of A while its run is paused to B having taken the run over (the
 *   first frame B's recovery publishes), then checked resolvable by a continue posted to B.
 */

const LEASE_MS = 1000;
const RESUME_STEPS = 60;
const FANOUT_STEPS = 150;
const FANOUT_CLIENTS = 10;

interface Client {
  readonly frames: { type: string; seq: number; pause_id?: string }[];
  next(check: (frame: Client['frames'][number]) => boolean): Promise<Client['frames'][number]>;
  close(): void;
}

/** A WebSocket client that keeps every sequenced frame and resolves waits as frames arrive. */
function connect(url: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const frames: Client['frames'] = [];
    let waiters: { check: (frame: Client['frames'][number]) => boolean; done: (frame: Client['frames'][number]) => void }[] = [];
    const client: Client = {
      frames,
      next: (check) => {
        const seen = frames.find(check);
        return seen ? Promise.resolve(seen) : new Promise((done) => waiters.push({ check, done }));
      },
      close: () => ws.close(),
    };
    ws.once('error', reject);
    ws.on('message', (data) => {
      const frame = (JSON.parse(String(data)) as { event?: Client['frames'][number] }).event;
      if (frame?.type === 'ws.hello') return resolve(client);
      if (!frame || typeof frame.seq !== 'number') return;
      frames.push(frame);
      const ready = waiters.filter((waiter) => waiter.check(frame));
      waiters = waiters.filter((waiter) => !ready.includes(waiter));
      for (const waiter of ready) waiter.done(frame);
    });
  });
}

const posters = new Map<string, ReturnType<typeof createJsonPoster>>();
/** A POST on a keep-alive connection per server (./post-json.ts). */
const post = (base: string, path: string, body: unknown): Promise<{ status: number; body: any }> => {
  const poster = posters.get(base) ?? createJsonPoster(base);
  posters.set(base, poster);
  return poster.post(path, body);
};

/** A script of `steps` tool calls then an answer, and the tools file the test helpers use. */
function writeFiles(dir: string, steps: number, name: string): { script: string; tools: string } {
  const tools = join(dir, 'tools.mjs');
  writeFileSync(tools, `export default [{ name: 'noop', description: 'does nothing', parameters: { type: 'object', properties: {} }, execute: async () => ({ ok: true }) }];\n`);
  const script = join(dir, `${name}.json`);
  const call = (i: number) => ({ text: `step ${i}`, tool_calls: [{ id: `call_${i}`, name: 'noop', arguments: {} }] });
  writeFileSync(script, JSON.stringify({ responses: [...Array.from({ length: steps }, (_, i) => call(i)), { text: 'done' }] }));
  return { script, tools };
}

export async function runClusterBenchmarks(): Promise<{ entries: BenchEntry[]; notes: string[] }> {
  if (!hasRedisServer()) return { entries: [], notes: ['cluster: redis-server is not installed (apt-get install -y redis-server), cluster_* and failover skipped'] };
  ensureBuilt();
  const redis = await startRedisServer();
  const dir = mkdtempSync(join(tmpdir(), 'stepwise-bench-cluster-'));
  const started: CliServer[] = [];
  const serve = async (name: string, steps: number): Promise<CliServer> => {
    const { script, tools } = writeFiles(dir, steps, name);
    const flags = ['--port', '0', '--debug', '--store', 'redis', '--redis-url', redis.url, '--lease-ms', String(LEASE_MS), '--script', script, '--tools', tools];
    const server = await startCli(flags);
    started.push(server);
    return server;
  };
  try {
    const entries: BenchEntry[] = [];
    // cluster_resume: every pause of a step-mode run on A continued from B.
    const [a, b] = await Promise.all([serve('resume', RESUME_STEPS), serve('resume', RESUME_STEPS)]);
    process.stderr.write('cluster: resume\n');
    const onB = await connect(`${b.wsBase}/ws?conv_id=resume`);
    await post(a.base, '/chat', { prompt: 'go', conv_id: 'resume', overrides: { step_mode: true } });
    const samples: number[] = [];
    for (let seen = 0; ; ) {
      const pause = await onB.next((frame) => frame.seq > seen && (frame.type === 'debugger.pause' || frame.type === 'run.end'));
      if (pause.type === 'run.end') break;
      const start = performance.now();
      const next = onB.next((frame) => frame.seq > pause.seq);
      await post(b.base, '/debug/continue', { pause_id: pause.pause_id });
      await next;
      samples.push(performance.now() - start);
      seen = pause.seq;
    }
    onB.close();
    entries.push(entry('cluster_resume', median(samples.slice(5)), 'ms'));
    entries.push(entry('cluster_resume_p99', percentile(samples.slice(5), 99), 'ms'));

    // cluster_fanout: the same kind of run, clients on A (baseline) then on B.
    const fanout = async (on: CliServer, convId: string): Promise<number> => {
      const clients = await Promise.all(Array.from({ length: FANOUT_CLIENTS }, () => connect(`${on.wsBase}/ws?conv_id=${convId}`)));
      const start = performance.now();
      await post(a.base, '/chat', { prompt: 'go', conv_id: convId });
      const ends = await Promise.all(clients.map((client) => client.next((frame) => frame.type === 'run.end')));
      const elapsed = (performance.now() - start) / 1000;
      for (const client of clients) client.close();
      return ends.reduce((sum, end) => sum + end.seq, 0) / elapsed;
    };
    process.stderr.write(`cluster: fanout (resume ${median(samples)} ms)\n`);
    const [fa, fb] = await Promise.all([serve('fanout', FANOUT_STEPS), serve('fanout', FANOUT_STEPS)]);
    const onOwner = await fanout(fa, 'fan_a');
    const onOther = await fanout(fb, 'fan_b');
    entries.push(entry('cluster_fanout', onOther, 'frames/s', onOwner));

    // failover: kill -9 the owner of a paused run.
    process.stderr.write('cluster: failover\n');
    const [owner, other] = await Promise.all([serve('failover', 2), serve('failover', 2)]);
    const watcher = await connect(`${other.wsBase}/ws?conv_id=failover`);
    await post(owner.base, '/chat', { prompt: 'go', conv_id: 'failover', overrides: { step_mode: true } });
    const paused = await watcher.next((frame) => frame.type === 'debugger.pause');
    const killed = performance.now();
    owner.process.kill('SIGKILL');
    await watcher.next((frame) => frame.seq > paused.seq);
    const tookOver = performance.now() - killed;
    const resolved = await post(other.base, '/debug/continue', { pause_id: paused.pause_id });
    watcher.close();
    entries.push(entry('failover', tookOver, 'ms'));
    const notes = [`cluster: lease ${LEASE_MS} ms; failover continue on the other instance answered ${resolved.status}`];
    return { entries, notes };
  } finally {
    for (const poster of posters.values()) poster.close();
    posters.clear();
    for (const server of started) await server.stop('SIGKILL');
    await redis.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}
