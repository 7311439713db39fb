import { readFileSync, truncateSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { get, post } from '../helpers/server-harness.js';
import { runCli } from '../helpers/server-cli.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { conversation, runToPause, until, useDurableServers } from './helpers.js';

/** Stops, deadlines and refusals of a durable server, through the real CLI (docs/protocol.md, Durability). */
describe('durable server: SIGTERM, deadlines while down, one process per data dir, unreadable stores', () => {
  const { dir: d, serve } = useDurableServers();
  /** `serve` run to completion (a refusal): exit code and output. */
  const refused = (script: string, extra: readonly string[] = []) =>
    runCli(['serve', '--port', '0', '--data-dir', d().dataDir, '--script', script, '--tools', d().toolsFile, ...extra]);

  it('should suspend on SIGTERM: exit 0, and the run is still paused at the next start', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 't1');
    const closed = ws.waitClose();
    expect(await first.stop('SIGTERM')).toBe(0);
    await closed;
    // Suspended, not cancelled: no client saw the run end.
    expect(ws.frames.map((frame) => frame.type)).not.toContain('run.end');

    const second = await serve(d(), script);
    const after = await conversation(second.base, 't1');
    expect(after.running).toBe(true);
    expect(after.pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
    expect(d().runs()).toEqual([]);
  }, 30_000);

  it('should resolve a pause whose deadline passed while the server was down as timeout, at start', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script, ['--pause-timeout-ms', '1500']);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 't2');
    await ws.close();
    await first.stop('SIGKILL');
    // The only wall-clock wait: the deadline must pass while no process is running.
    await until(async () => Date.now(), (now) => now > pause.deadline_ms + 100, 5000);

    const second = await serve(d(), script, ['--pause-timeout-ms', '1500']);
    const replay = await SemClient.connect(`${second.wsBase}/ws?conv_id=t2&since_seq=0`);
    const resumed = await replay.waitFor((frame) => frame.type === 'debugger.resume' && frame.pause_id === pause.pause_id);
    expect(resumed).toMatchObject({ reason: 'timeout', by: 'system' });
    // The timeout action (continue) ran the tool; the after_tools pause timed out as well.
    const done = await until(() => conversation(second.base, 't2'), (c) => c.running === false);
    expect(done.turns[0].blocks.at(-1).payload.text).toBe('All done.');
    expect(d().runs()).toEqual(['slow']);
    await replay.close();
  }, 30_000);

  it('should refuse a second process on the same data dir: exit 1 naming the dir and the holder pid', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    const second = refused(script);
    expect(second.status).toBe(1);
    expect(second.output).toContain(d().dataDir);
    expect(second.output).toContain(String(first.process.pid));
    expect((await get(first.base, '/healthz')).status).toBe(200);
  }, 30_000);

  it('should refuse a truncated store and a store of a newer schema, leaving the file untouched', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    await post(first.base, '/chat', { prompt: 'go', conv_id: 't4' });
    await until(() => conversation(first.base, 't4'), (c) => c.running === false);
    expect(await first.stop('SIGTERM')).toBe(0);
    const file = join(d().dataDir, 'stepwise.db');

    const db = new Database(file);
    db.pragma('user_version = 999');
    db.close();
    const newer = readFileSync(file);
    const fromTheFuture = refused(script);
    expect(fromTheFuture.status).toBe(1);
    expect(fromTheFuture.output).toMatch(/cannot read the store .*stepwise\.db/);
    expect(fromTheFuture.output).toMatch(/newer|version/);
    expect(readFileSync(file).equals(newer)).toBe(true);

    truncateSync(file, Math.floor(statSync(file).size / 2));
    const truncated = readFileSync(file);
    const cut = refused(script);
    expect(cut.status).toBe(1);
    expect(cut.output).toMatch(/cannot read the store .*stepwise\.db/);
    expect(readFileSync(file).equals(truncated)).toBe(true);
  }, 30_000);

  it('should keep nothing with --store memory, and say when the Redis of --store redis cannot be reached', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script, ['--store', 'memory']);
    await post(first.base, '/chat', { prompt: 'go', conv_id: 't5' });
    await until(() => conversation(first.base, 't5'), (c) => c.running === false);
    expect(await first.stop('SIGTERM')).toBe(0);
    const second = await serve(d(), script, ['--store', 'memory']);
    expect((await get(second.base, '/conversations')).body.conversations).toEqual([]);

    const redis = refused(script, ['--store', 'redis', '--redis-url', 'redis://127.0.0.1:1']);
    expect(redis.status).toBe(1);
    expect(redis.output).toMatch(/the redis store at redis:\/\/127\.0\.0\.1:1 is unavailable: connect ECONNREFUSED/);
  }, 30_000);
});
