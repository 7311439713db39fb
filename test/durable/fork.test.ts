import { get, post } from '../helpers/server-harness.js';
import { SemClient } from '../helpers/server-ws-client.js';
import { conversation, runToPause, until, useDurableServers } from './helpers.js';

/** Forks in a SQLite data dir survive a `kill -9` through the real CLI (docs/protocol.md, Durability and Forks). */
describe('durable server: forks survive a restart', () => {
  const { dir: d, serve } = useDurableServers();

  it('should keep forks at a turn and at a pause, with forked_from, and the forked pause answerable after a kill -9', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    // A finished turn to fork at.
    expect((await post(first.base, '/chat', { prompt: 'go', conv_id: 'done' })).status).toBe(200);
    const finished = await until(() => conversation(first.base, 'done'), (c) => c.running === false);
    const turn = finished.turns[0];
    const atTurn = await post(first.base, '/conversations/done/fork', { turn_id: turn.id });
    expect(atTurn.status).toBe(200);
    // A pause to fork at.
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'paused');
    const atPause = await post(first.base, '/conversations/paused/fork', { pause_id: pause.pause_id });
    expect(atPause.status).toBe(200);
    const forkedPause = (await conversation(first.base, atPause.body.conv_id)).pending_pauses[0];
    await ws.close();
    await first.stop('SIGKILL');

    const second = await serve(d(), script);
    const listed = (await get(second.base, '/conversations')).body.conversations;
    expect(listed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ conv_id: atTurn.body.conv_id, forked_from: { conv_id: 'done', turn_id: turn.id } }),
        expect.objectContaining({ conv_id: atPause.body.conv_id, forked_from: { conv_id: 'paused', pause_id: pause.pause_id } }),
      ]),
    );
    const turnFork = await conversation(second.base, atTurn.body.conv_id);
    expect(turnFork).toMatchObject({ forked_from: { conv_id: 'done', turn_id: turn.id }, running: false });
    expect(turnFork.turns).toEqual([turn]);

    // The fork's pause is back with its id and deadline; the source's too, each on its own.
    const pauseFork = await conversation(second.base, atPause.body.conv_id);
    expect(pauseFork).toMatchObject({ forked_from: { conv_id: 'paused', pause_id: pause.pause_id }, running: true });
    expect(pauseFork.pending_pauses).toEqual([expect.objectContaining({ pause_id: forkedPause.pause_id, deadline_ms: forkedPause.deadline_ms, tool_calls: pause.extra.tool_calls })]);
    expect((await conversation(second.base, 'paused')).pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id })]);

    // Denied in the fork, through to the end; the source still waits.
    const fws = await SemClient.connect(`${second.wsBase}/ws?conv_id=${atPause.body.conv_id}`);
    expect((await post(second.base, '/debug/continue', { pause_id: forkedPause.pause_id, action: 'deny', reason: 'not in the fork' })).status).toBe(200);
    const afterTools = await fws.next('debugger.pause');
    expect((await post(second.base, '/debug/continue', { pause_id: afterTools.pause_id })).status).toBe(200);
    expect(await fws.next('run.end')).toMatchObject({ status: 'completed' });
    expect((await conversation(second.base, 'paused')).pending_pauses).toEqual([expect.objectContaining({ pause_id: pause.pause_id })]);
    expect(d().runs()).toEqual(['slow']);
    await fws.close();

    // A pause restored at start can be forked too: its checkpoint came back with it.
    const again = await post(second.base, '/conversations/paused/fork', { pause_id: pause.pause_id });
    expect(again.status).toBe(200);
    expect((await conversation(second.base, again.body.conv_id)).pending_pauses).toEqual([
      expect.objectContaining({ pause_id: again.body.pause_id, phase: 'after_inference', tool_calls: pause.extra.tool_calls }),
    ]);
  }, 30_000);
});
