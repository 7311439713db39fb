import { filter, firstValueFrom } from 'rxjs';
import { ForkError } from '../../src/index.js';
import { callEcho, createTestRuntime } from '../marbles/helpers.js';

/** `Stepwise.fork` as a library user calls it (the HTTP route is one line over it). */
describe('Stepwise.fork', () => {
  it('should re-enter a paused run in a new conversation, paused again with a new id, the source untouched', async () => {
    const rt = createTestRuntime({ responses: [callEcho('a', 'call_1'), { text: 'done' }], stepMode: true, pauseTimeoutMs: 60_000 });
    const pause = await rt.session.start({ prompt: 'go' }).nextPause();
    const turnsBefore = rt.session.turns();

    const { session: fork, pause_id } = await rt.sw.fork({ source: rt.session, pause_id: pause!.pause_id });
    expect(fork.forked_from).toEqual({ conv_id: 'c1', pause_id: pause!.pause_id });
    expect(pause_id).toBeDefined();
    expect(pause_id).not.toBe(pause!.pause_id);
    expect(rt.sw.controller.get(pause_id!)).toMatchObject({ conv_id: fork.conv_id, phase: 'after_inference', tool_calls: pause!.tool_calls });
    expect(rt.sw.controller.isEnabled(fork.session_id)).toBe(true);
    expect(await rt.sw.store.conversation(fork.conv_id)).toMatchObject({ forked_from: { conv_id: 'c1', pause_id: pause!.pause_id } });

    // Denied in the fork: the fork's run goes on alone and ends; the source is still paused as it was.
    const ended = firstValueFrom(rt.sw.hub.events$.pipe(filter(({ event }) => event.type === 'run-ended' && event.conv_id === fork.conv_id)));
    expect(rt.sw.controller.submit({ pause_id: pause_id!, action: 'deny', reason: 'no' }).ok).toBe(true);
    rt.sw.controller.disable(fork.session_id);
    await ended;
    expect(fork.turns()[0]?.blocks.find((block) => block.kind === 'tool_use')).toMatchObject({ payload: { id: 'call_1', error: expect.stringContaining('no') } });
    expect(rt.sw.controller.pending(rt.session.session_id)).toEqual([pause]);
    expect(rt.session.turns()).toEqual(turnsBefore);
    rt.sw.dispose();
  });

  it('should refuse unknown turns and pauses, resolved pauses and running turns with ForkError codes', async () => {
    const rt = createTestRuntime({ responses: [{ text: 'hi' }, callEcho('a')], pauseTimeoutMs: 60_000 });
    await rt.session.start({ prompt: 'one' }).result();
    const codeOf = (request: Parameters<typeof rt.sw.fork>[0]) => rt.sw.fork(request).then(() => 'ok', (error: unknown) => (error instanceof ForkError ? error.code : String(error)));
    expect(await codeOf({ source: rt.session, turn_id: 'nope' })).toBe('unknown_turn');
    expect(await codeOf({ source: rt.session, pause_id: 'nope' })).toBe('unknown_pause');
    rt.sw.controller.enable(rt.session.session_id);
    const handle = rt.session.start({ prompt: 'two' });
    const pause = await handle.nextPause();
    expect(await codeOf({ source: rt.session, turn_id: handle.turn_id })).toBe('turn_running');
    expect(rt.sw.controller.submit({ pause_id: pause!.pause_id }).ok).toBe(true);
    expect(await codeOf({ source: rt.session, pause_id: pause!.pause_id })).toBe('pause_resolved');
    rt.sw.dispose();
  });
});
