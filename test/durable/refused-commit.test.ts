import Database from 'better-sqlite3';
import { join } from 'node:path';
import { get, post } from '../helpers/server-harness.js';
import { ensureBuilt, type CliServer } from '../helpers/server-cli.js';
import { SemClient, type Frame } from '../helpers/server-ws-client.js';
import { createDurableDir, serveOn, type DurableDir } from './helpers.js';

/**
 * What a trigger of the test's own refuses: a real SQLite failure, in the real file, of one conversation's
 * writes: its decisions that edit the call to `n: 7`. Installed while the server is stopped (it holds the
 * file's lock while it runs).
 */
const REFUSE_DECISIONS = `CREATE TRIGGER refuse_decisions BEFORE INSERT ON decisions WHEN NEW.conv_id = 'bad' AND NEW.decision LIKE '%"n":7%'
  BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END`;

const seqsOf = (frames: readonly Frame[]): number[] => frames.filter((frame) => frame.seq !== undefined).map((frame) => frame.seq as number);

/**
 * docs/protocol.md, A 200 means committed: a decision the store refuses is answered 500 `store_failed`,
 * takes no effect (the pause is pending again, nothing ran, no audit row), leaves the other
 * conversations' writes alone, and the conversation goes on being written once the store takes it.
 */
describe('a decision the store refuses, through the CLI on SQLite', () => {
  let d: DurableDir;
  const started: CliServer[] = [];
  beforeAll(() => ensureBuilt(), 120_000);
  beforeEach(() => {
    d = createDurableDir();
  });
  afterEach(async () => {
    for (const server of started.splice(0)) await server.stop('SIGKILL');
    d.remove();
  });
  const serve = async (): Promise<CliServer> => {
    const server = await serveOn(d, d.script('s', 'slow'), ['--store', 'sqlite', '--pause-timeout-ms', '60000']);
    started.push(server);
    return server;
  };

  it('should answer 500 store_failed, keep the pause pending with nothing run or recorded, and go on gapless with the next decision', async () => {
    // The file is made by a first start, then the trigger is added to it.
    await (await serve()).stop('SIGTERM');
    started.length = 0;
    const db = new Database(join(d.dataDir, 'stepwise.db'));
    db.exec(REFUSE_DECISIONS);
    db.close();
    const server = await serve();
    const clients = new Map<string, SemClient>();
    for (const conv of ['bad', 'good']) {
      const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${conv}`);
      clients.set(conv, ws);
      expect((await post(server.base, '/debug/step/enable', { conv_id: conv })).status).toBe(200);
      expect((await post(server.base, '/chat', { prompt: 'go', conv_id: conv })).status).toBe(200);
    }
    const bad = clients.get('bad') as SemClient;
    const good = clients.get('good') as SemClient;
    const badPause = await bad.next('debugger.pause');
    const goodPause = await good.next('debugger.pause');

    // Both decisions at once: the good one is committed whatever happens to the bad one.
    const [refused, accepted] = await Promise.all([
      post(server.base, '/debug/continue', { pause_id: badPause.pause_id, action: 'edit', edits: { call_1: { n: 7 } } }),
      post(server.base, '/debug/continue', { pause_id: goodPause.pause_id }),
    ]);
    expect(refused).toMatchObject({ status: 500, body: { error: { code: 'store_failed' } } });
    expect(refused.body.error.message).toMatch(/refused by the test trigger/);
    expect(accepted.status).toBe(200);
    const goodAfter = await good.next('debugger.pause');
    expect((await post(server.base, '/debug/continue', { pause_id: goodAfter.pause_id })).status).toBe(200);
    expect(await good.next('run.end')).toMatchObject({ status: 'completed' });

    // The refused decision took no effect: pending with its id and deadline, no audit row, nothing ran, no resume seen.
    await bad.ping();
    expect((await get(server.base, '/debug/pauses?conv_id=bad')).body.pauses).toEqual([
      expect.objectContaining({ pause_id: badPause.pause_id, deadline_ms: badPause.deadline_ms }),
    ]);
    expect((await get(server.base, '/conversations/bad/decisions')).body.decisions).toEqual([]);
    expect(bad.frames.some((frame) => frame.type === 'debugger.resume' || frame.type === 'tool.result')).toBe(false);
    // Only the good conversation's call ran.
    expect(d.runs()).toEqual(['slow']);

    // Another decision at the same pause is taken: the run goes on, and the stream has no gap.
    expect((await post(server.base, '/debug/continue', { pause_id: badPause.pause_id, action: 'edit', edits: { call_1: { n: 8 } } })).status).toBe(200);
    expect(await bad.next('debugger.resume')).toMatchObject({ pause_id: badPause.pause_id, reason: 'edited' });
    expect(await bad.next('debugger.pause')).toMatchObject({ phase: 'after_tools' });
    const after = (await get(server.base, '/debug/pauses?conv_id=bad')).body.pauses[0];
    expect((await post(server.base, '/debug/continue', { pause_id: after.pause_id })).status).toBe(200);
    expect(await bad.next('run.end')).toMatchObject({ status: 'completed' });
    expect(d.runs()).toEqual(['slow', 'slow']);
    const seqs = seqsOf(bad.frames);
    expect(seqs).toEqual(seqs.map((_seq, index) => index + 1));
    const hydrated = (await get(server.base, '/hydrate?conv_id=bad&since_seq=0')).body;
    expect(hydrated.frames.map((frame: { event: Frame }) => frame.event.seq)).toEqual(seqs);
    expect((await get(server.base, '/conversations/bad/decisions')).body.decisions).toHaveLength(2);

    // What was acknowledged survives a kill: one edit, recorded once, with the arguments that ran.
    await server.stop('SIGKILL');
    const again = await serve();
    const decisions = (await get(again.base, '/conversations/bad/decisions')).body.decisions;
    expect(decisions.map((decision: { reason: string }) => decision.reason)).toEqual(['edited', 'continued']);
    expect(decisions[0].edits).toEqual({ call_1: { before: { n: 1 }, after: { n: 8 } } });
    for (const ws of clients.values()) await ws.close();
  }, 40_000);
});
