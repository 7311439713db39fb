import Database from 'better-sqlite3';
import { join } from 'node:path';
import { argsDigest } from '../../src/core/args-digest.js';
import { get, post } from '../helpers/server-harness.js';
import { conversation, runToPause, until, useDurableServers } from './helpers.js';

/** A stored conversation whose run has ended. */
const finished = (c: any): boolean => c.conv_id !== undefined && c.running === false;

/**
 * Changes a call's arguments where the store keeps them (the turn, its segments, the checkpoint), as someone with
 * access to the data dir could while the server is down: what the resumed run would otherwise execute.
 */
function tamperArgs(dataDir: string, from: string, to: string): number {
  const db = new Database(join(dataDir, 'stepwise.db'));
  try {
    let changed = 0;
    for (const [table, column] of [['turns', 'blocks'], ['turn_blocks', 'blocks'], ['checkpoints', 'blocks'], ['checkpoints', 'checkpoint']]) {
      changed += db.prepare(`UPDATE ${table} SET ${column} = replace(${column}, ?, ?) WHERE instr(${column}, ?) > 0`).run(from, to, from).changes;
    }
    return changed;
  } finally {
    db.close();
  }
}

/** docs/protocol.md, Approvals bound to what runs: through the real CLI on a real SQLite file. */
describe('decisions bound to the arguments that run', () => {
  const { dir: d, serve } = useDurableServers();

  it('should refuse and audit a call whose arguments changed between the decision and its execution', async () => {
    const script = d().script('tool', 'slow_idempotent');
    const first = await serve(d(), script, [], { SLOW_TOOL_MS: '20000' });
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'b1');
    expect(pause.extra.tool_calls).toEqual([{ id: 'call_1', name: 'slow_idempotent', input: { n: 1 } }]);
    expect((await post(first.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    expect((await post(first.base, '/debug/step/disable', { conv_id: 'b1' })).status).toBe(200);
    await ws.waitFor((frame) => frame.type === 'tool.delta' && frame.patch?.exec === true);
    await ws.close();
    expect(await first.stop('SIGKILL')).toBe(null);

    // The call is idempotent: after a restart it would run again, now with other arguments.
    expect(tamperArgs(d().dataDir, '"n":1', '"n":2')).toBeGreaterThan(0);
    const second = await serve(d(), script);
    const done = await until(() => conversation(second.base, 'b1'), finished);
    const use = done.turns[0].blocks.find((block: { kind: string }) => block.kind === 'tool_use');
    expect(use.payload).toEqual({ id: 'call_1', result: null, error: 'arguments changed after approval' });
    expect(d().runs()).toEqual(['slow_idempotent']);

    const { decisions } = (await get(second.base, '/conversations/b1/decisions')).body;
    expect(decisions).toEqual([expect.objectContaining({ pause_id: pause.pause_id, reason: 'continued', by: 'local', args_digests: { call_1: argsDigest({ n: 1 }) } })]);
    const { frames } = (await get(second.base, '/hydrate?conv_id=b1')).body;
    const refused = frames.map((frame: any) => frame.event).filter((event: any) => event.type === 'log' && event.fields?.rejected === 'args_changed');
    expect(refused).toEqual([expect.objectContaining({ level: 'warn', message: 'arguments changed after approval', fields: { tool_call_id: 'call_1', name: 'slow_idempotent', rejected: 'args_changed' } })]);
  }, 40_000);

  it('should run the same call again after a restart when nothing changed', async () => {
    const script = d().script('tool', 'slow_idempotent');
    const first = await serve(d(), script, [], { SLOW_TOOL_MS: '20000' });
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'b2');
    expect((await post(first.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    expect((await post(first.base, '/debug/step/disable', { conv_id: 'b2' })).status).toBe(200);
    await ws.waitFor((frame) => frame.type === 'tool.delta' && frame.patch?.exec === true);
    await ws.close();
    await first.stop('SIGKILL');

    const second = await serve(d(), script);
    const done = await until(() => conversation(second.base, 'b2'), finished);
    expect(done.turns[0].blocks.find((block: { kind: string }) => block.kind === 'tool_use').payload).toEqual({ id: 'call_1', result: { ok: true, n: 1 } });
    expect(d().runs()).toEqual(['slow_idempotent', 'slow_idempotent']);
  }, 40_000);
});
