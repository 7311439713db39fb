import { join } from 'node:path';
import Database from 'better-sqlite3';
import { get, post } from '../helpers/server-harness.js';
import type { CliServer } from '../helpers/server-cli.js';
import { SemClient, type Frame } from '../helpers/server-ws-client.js';
import { conversation, runToPause, useDurableServers } from './helpers.js';

const CONVS = ['c1', 'c2', 'c3'];

/** Continues the conversation's pauses (after_inference, then after_tools) and resolves at its `run.end`. */
async function continueToEnd(server: CliServer, conv: string, pauseId: string | undefined): Promise<Frame> {
  const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${conv}`);
  try {
    expect((await post(server.base, '/debug/continue', { pause_id: pauseId })).status).toBe(200);
    const afterTools = await ws.waitFor((frame) => frame.type === 'debugger.pause' && frame.phase === 'after_tools');
    expect((await post(server.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    return await ws.waitFor((frame) => frame.type === 'run.end');
  } finally {
    await ws.close();
  }
}

/** Every frame of the conversation from the first, as a client joining with `since_seq=0` gets them. */
async function replay(server: CliServer, conv: string, until: (frames: readonly Frame[]) => boolean): Promise<Frame[]> {
  const ws = await SemClient.connect(`${server.wsBase}/ws?conv_id=${conv}&since_seq=0`);
  try {
    await ws.waitFor(() => until(ws.sequenced));
    await ws.ping();
    return ws.sequenced;
  } finally {
    await ws.close();
  }
}

const errorLogs = (frames: readonly Frame[]): Frame[] => frames.filter((frame) => frame.type === 'log' && frame.level === 'error');

/**
 * Recovery is per run, through the real CLI on a real SQLite file (docs/protocol.md, Durability): a
 * `kill -9`, one run's checkpoint spoiled by hand, and the restarted server serves every other run
 * while the spoiled one ends `failed` with a `log` frame, once.
 */
describe('serve --store sqlite: a run that cannot be restored after kill -9', () => {
  const { dir: d, serve } = useDurableServers();

  it.each([
    { what: 'does not parse', spoil: `'{"conv_id": "c2", "next": '` },
    { what: 'has the wrong shape', spoil: `json_set(checkpoint, '$.iteration', 'many')` },
  ])('should end only the run whose checkpoint $what failed, serve the others, and not try it again', async ({ spoil }) => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    const pauses = new Map<string, Frame>();
    for (const conv of CONVS) {
      const { ws, pause } = await runToPause(first.base, first.wsBase, conv);
      pauses.set(conv, pause);
      await ws.close();
    }
    expect(await first.stop('SIGKILL')).toBe(null);
    const bad = pauses.get('c2') as Frame;
    const db = new Database(join(d().dataDir, 'stepwise.db'));
    expect(db.prepare(`UPDATE checkpoints SET checkpoint = ${spoil} WHERE conv_id = ?`).run('c2').changes).toBe(1);
    db.close();

    const second = await serve(d(), script);
    expect(second.stdout()).toContain('store: 3 conversation(s) restored, 2 run(s) resumed (2 paused)');
    expect(second.stdout()).toMatch(new RegExp(`store: the run ${bad.metadata.inference_id} of c2 could not be restored and ended failed: the checkpoint of run ${bad.metadata.inference_id} cannot be read back`));
    // The spoiled run: a log frame naming it and why, its pause resolved as a cancelled run's, then run.end failed.
    const frames = await replay(second, 'c2', (seen) => seen.some((frame) => frame.type === 'run.end'));
    const [log] = errorLogs(frames);
    expect(log?.message).toMatch(new RegExp(`^run ${bad.metadata.inference_id} could not be restored from the store: the checkpoint of run ${bad.metadata.inference_id} cannot be read back: `));
    const after = frames.slice(frames.indexOf(log as Frame) + 1);
    expect(after.map((frame) => frame.type)).toEqual(['debugger.resume', 'run.end']);
    expect(after[0]).toMatchObject({ pause_id: bad.pause_id, reason: 'cancelled', by: 'system' });
    expect(after[1]).toMatchObject({ status: 'failed', error: expect.stringMatching(/^the run could not be restored from the store: the checkpoint of run /) });
    expect(await conversation(second.base, 'c2')).toMatchObject({ running: false, pending_pauses: [] });
    const hydrated = (await get(second.base, '/hydrate?conv_id=c2&since_seq=0')).body;
    // `/hydrate` has it too, as the socket sent it.
    expect(errorLogs(hydrated.frames.map((frame: { event: Frame }) => frame.event))).toEqual([log]);
    // Every other run is paused again with its pause id, and goes on to the end.
    for (const conv of ['c1', 'c3']) {
      const pause = pauses.get(conv) as Frame;
      expect((await conversation(second.base, conv)).pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id, deadline_ms: pause.deadline_ms })]);
      expect(await continueToEnd(second, conv, pause.pause_id)).toMatchObject({ status: 'completed' });
    }
    expect(d().runs()).toEqual(['slow', 'slow']);
    expect(await second.stop('SIGKILL')).toBe(null);

    // Stored as ended: the next start does not log it again, and serves.
    const third = await serve(d(), script);
    expect(third.stdout()).not.toContain('could not be restored');
    expect((await get(third.base, '/healthz')).status).toBe(200);
    expect(await conversation(third.base, 'c2')).toMatchObject({ running: false, pending_pauses: [] });
    const again = await replay(third, 'c2', (seen) => seen.some((frame) => frame.type === 'run.end'));
    expect(errorLogs(again)).toEqual([log]);
    for (const conv of CONVS) expect((await conversation(third.base, conv)).running).toBe(false);
  }, 60_000);

  it('should end failed, when its pause is decided, a run restored asleep whose turn cannot be read back', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    const pauses = new Map<string, Frame>();
    for (const conv of ['c1', 'c2']) {
      const { ws, pause } = await runToPause(first.base, first.wsBase, conv);
      pauses.set(conv, pause);
      await ws.close();
    }
    expect(await first.stop('SIGKILL')).toBe(null);
    const bad = pauses.get('c2') as Frame;
    const db = new Database(join(d().dataDir, 'stepwise.db'));
    // Its checkpoint's blocks are its turn's, read back from the turn's row when the run wakes.
    db.prepare(`UPDATE checkpoints SET blocks = NULL WHERE conv_id = ?`).run('c2');
    expect(db.prepare(`UPDATE turns SET blocks = '[{"id": "b1", "kind": ' WHERE conv_id = ?`).run('c2').changes).toBe(1);
    db.close();

    // Restored asleep, nothing of its turn parsed: it is paused again as the others are.
    const second = await serve(d(), script);
    expect(second.stdout()).toContain('2 run(s) resumed (2 paused)');
    expect((await conversation(second.base, 'c1')).pending_pauses).toEqual([expect.objectContaining({ pause_id: pauses.get('c1')?.pause_id })]);
    const ws = await SemClient.connect(`${second.wsBase}/ws?conv_id=c2`);
    expect(ws.hello.pending_pauses).toEqual([expect.objectContaining({ pause_id: bad.pause_id })]);
    // The decision is taken (200: recorded); rebuilding the run from the store then fails, and it ends there.
    expect((await post(second.base, '/debug/continue', { pause_id: bad.pause_id })).status).toBe(200);
    const end = await ws.waitFor((frame) => frame.type === 'run.end');
    expect(end).toMatchObject({ status: 'failed', error: expect.stringMatching(/^the run could not be restored from the store: the blocks of turn \S+ cannot be read back: it does not parse/) });
    expect(errorLogs(ws.sequenced)).toEqual([expect.objectContaining({ message: expect.stringMatching(new RegExp(`^run ${bad.metadata.inference_id} could not be restored from the store`)) })]);
    await ws.close();
    expect((await get(second.base, '/conversations/c2/decisions')).body.decisions.map((each: { reason: string }) => each.reason)).toEqual(['continued']);
    expect(await conversation(second.base, 'c2')).toMatchObject({ running: false, pending_pauses: [], turns: [{ blocks: [] }] });
    expect(await continueToEnd(second, 'c1', pauses.get('c1')?.pause_id)).toMatchObject({ status: 'completed' });
    // No tool of the failed run ran.
    expect(d().runs()).toEqual(['slow']);
    expect(await second.stop('SIGKILL')).toBe(null);

    const third = await serve(d(), script);
    expect(third.stdout()).not.toContain('could not be restored');
    expect((await conversation(third.base, 'c2')).running).toBe(false);
  }, 60_000);
});
