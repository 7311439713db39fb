import { post } from '../helpers/server-harness.js';
import { conversation, runToPause, until, useDurableServers } from './helpers.js';

/**
 * The step filter is part of the stored step setting (docs/protocol.md, Breakpoints and result edits): a restart
 * keeps it and applies it.
 */
describe('durable server: step filter across a restart', () => {
  const { dir: d, serve } = useDurableServers();

  it('should show and apply the same filter after SIGTERM and a new start', async () => {
    const script = d().script('tool', 'slow');
    const first = await serve(d(), script);
    const { ws, pause } = await runToPause(first.base, first.wsBase, 'f1');
    // The filter leaves out the phase the run is paused at: the pause an operator has seen still survives.
    const filter = { tools: ['slow'], phases: ['after_tools'] };
    expect(await post(first.base, '/debug/step/enable', { conv_id: 'f1', ...filter })).toMatchObject({ status: 200 });
    expect(await conversation(first.base, 'f1')).toMatchObject({ step_mode: true, step_filter: filter });
    const closed = ws.waitClose();
    expect(await first.stop('SIGTERM')).toBe(0);
    await closed;

    const second = await serve(d(), script);
    const after = await conversation(second.base, 'f1');
    expect(after).toMatchObject({ step_mode: true, step_filter: filter, pending_pauses: [{ pause_id: pause.pause_id }] });
    expect((await post(second.base, '/debug/continue', { pause_id: pause.pause_id })).status).toBe(200);
    // slow ran and the filter lists after_tools: one more pause.
    const next = await until(() => conversation(second.base, 'f1'), (c) => c.pending_pauses.length === 1 && c.pending_pauses[0].pause_id !== pause.pause_id);
    expect(next.pending_pauses[0].phase).toBe('after_tools');
    expect((await post(second.base, '/debug/continue', { pause_id: next.pending_pauses[0].pause_id })).status).toBe(200);
    const done = await until(() => conversation(second.base, 'f1'), (c) => c.running === false);
    expect(done.pending_pauses).toEqual([]);
    expect(done.turns[0].blocks.at(-1).payload.text).toBe('All done.');
    expect(d().runs()).toEqual(['slow']);
  }, 60_000);
});
