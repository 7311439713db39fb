import { filter, firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Stepwise } from '../../src/index.js';
import type { SequencedEvent } from '../../src/streams/events.js';
import { useTempDir } from './fixtures.js';
import { pausingRuntime } from './paused-runtime.js';

/**
 * A run restored at a pause is held as that pause alone until it resolves (its loop is built then):
 * every way a pause can end must do what it does to a run that never stopped. Real SQLite files;
 * the first runtime pauses and is suspended as SIGTERM does, the second recovers.
 */
describe('a run restored at a pause', () => {
  const dirOf = useTempDir();
  const runtime = pausingRuntime;

  /** One conversation paused at `after_inference` (or, continued once, at `after_tools`), then suspended; the recovered runtime. */
  async function recovered(phase: 'after_inference' | 'after_tools'): Promise<{ sw: Stepwise; dataDir: string; convId: string; pauseId: string; callId: string; events: SequencedEvent[] }> {
    const dataDir = dirOf();
    const first = runtime(dataDir);
    const session = first.sessions.open();
    first.controller.enable(session.session_id);
    session.start({ prompt: 'go' });
    const [atInference] = first.controller.pending();
    if (phase === 'after_tools') {
      expect(first.controller.submit({ pause_id: atInference!.pause_id }).ok).toBe(true);
      await firstValueFrom(first.hub.events$.pipe(filter(({ event }) => event.type === 'paused' && event.pause.phase === 'after_tools')));
    }
    const [pause] = first.controller.pending();
    expect(pause?.phase).toBe(phase);
    await first.suspend();
    await first.store.close();

    const sw = runtime(dataDir);
    const events: SequencedEvent[] = [];
    sw.hub.events$.subscribe((frame) => events.push(frame));
    expect(await sw.recover()).toEqual({ conversations: 1, runs: 1, pauses: 1 });
    expect(sw.controller.pending()).toEqual([pause]);
    return { sw, dataDir, convId: session.conv_id, pauseId: pause!.pause_id, callId: atInference!.tool_calls[0]!.id, events };
  }

  const ended = (sw: Stepwise, convId: string) =>
    firstValueFrom(sw.hub.events$.pipe(filter(({ event }) => event.type === 'run-ended' && event.conv_id === convId)));
  const close = async (sw: Stepwise): Promise<void> => {
    sw.dispose();
    await sw.store.close();
  };

  it('should end cancelled on cancel: the pause resolves as cancelled, then run-ended, and its calls are closed', async () => {
    const { sw, convId, pauseId, callId, events } = await recovered('after_inference');
    try {
      const session = sw.sessions.get(convId)!;
      expect(session.running).toBe(true);
      expect(session.cancel()).toBe(true);
      expect(events.map(({ event }) => event.type)).toEqual(['log', 'paused', 'resumed', 'run-ended']);
      expect(events[2]?.event).toMatchObject({ pause_id: pauseId, reason: 'cancelled', by: 'system' });
      expect(events[3]?.event).toMatchObject({ status: 'cancelled' });
      expect(session.running).toBe(false);
      expect(session.turns()[0]?.blocks.at(-1)).toMatchObject({ kind: 'tool_use', payload: { id: callId, result: null } });
      expect(await sw.store.checkpoints(convId)).toEqual([]);
      expect(await sw.store.pauses(convId)).toEqual([]);
      expect((await sw.store.decisions(convId)).map((d) => d.reason)).toEqual(['cancelled']);
    } finally {
      await close(sw);
    }
  });

  it('should check an edit against the tool schema and run the tool with the edited arguments', async () => {
    const { sw, convId, pauseId, callId } = await recovered('after_inference');
    try {
      const refused = sw.controller.submit({ pause_id: pauseId, action: 'edit', edits: { [callId]: { text: 7 } } });
      expect(refused.ok === false && refused.error.code).toBe('invalid_arguments');
      const done = ended(sw, convId);
      expect(sw.controller.submit({ pause_id: pauseId, action: 'edit', edits: { [callId]: { text: 'edited' } }, by: 'alice' }).ok).toBe(true);
      const next = await firstValueFrom(sw.hub.events$.pipe(filter(({ event }) => event.type === 'paused')));
      expect(next.event).toMatchObject({ pause: { phase: 'after_tools' } });
      expect(sw.controller.submit({ pause_id: sw.controller.pending()[0]!.pause_id }).ok).toBe(true);
      expect((await done).event).toMatchObject({ status: 'completed' });
      const blocks = sw.sessions.get(convId)!.turns()[0]!.blocks;
      expect(blocks.find((block) => block.kind === 'tool_use')?.payload).toEqual({ id: callId, result: { text: 'edited' } });
      expect(blocks.at(-1)).toMatchObject({ kind: 'llm_text', payload: { text: 'done' } });
      expect((await sw.store.decisions(convId)).map((d) => [d.reason, d.by])).toEqual([
        ['edited', 'alice'],
        ['continued', 'local'],
      ]);
      expect(await sw.store.checkpoints(convId)).toEqual([]);
    } finally {
      await close(sw);
    }
  });

  it('should be released by switching step mode off, and complete', async () => {
    const { sw, convId } = await recovered('after_inference');
    try {
      const done = ended(sw, convId);
      expect(sw.controller.disable(sw.sessions.get(convId)!.session_id)).toBe(1);
      expect((await done).event).toMatchObject({ status: 'completed' });
      expect((await sw.store.decisions(convId)).map((d) => d.reason)).toEqual(['disabled']);
    } finally {
      await close(sw);
    }
  });

  it('should take an edit of results at after_tools: the model sees the edited result', async () => {
    const { sw, convId, pauseId, callId } = await recovered('after_tools');
    try {
      const done = ended(sw, convId);
      expect(sw.controller.submit({ pause_id: pauseId, action: 'edit', results: { [callId]: { text: 'replaced' } } }).ok).toBe(true);
      expect((await done).event).toMatchObject({ status: 'completed' });
      const use = sw.sessions.get(convId)!.turns()[0]!.blocks.find((block) => block.kind === 'tool_use');
      expect(use).toMatchObject({ payload: { id: callId, result: { text: 'replaced' } }, metadata: { original_result: { text: 'x' }, edited: true } });
      expect(await sw.store.decisions(convId)).toEqual([
        expect.objectContaining({ reason: 'continued', phase: 'after_inference' }),
        expect.objectContaining({ reason: 'edited', phase: 'after_tools', results: { [callId]: { before: { text: 'x' }, after: { text: 'replaced' } } } }),
      ]);
    } finally {
      await close(sw);
    }
  });

  it('should stay paused through a suspend and come back paused again', async () => {
    const { sw, dataDir, pauseId, convId } = await recovered('after_inference');
    await sw.suspend();
    expect(await sw.store.decisions(convId)).toEqual([]);
    await sw.store.close();
    const third = runtime(dataDir);
    try {
      expect(await third.recover()).toEqual({ conversations: 1, runs: 1, pauses: 1 });
      expect(third.controller.pending().map((pause) => pause.pause_id)).toEqual([pauseId]);
    } finally {
      await close(third);
    }
  });
});
